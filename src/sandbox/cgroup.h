// SPDX-License-Identifier: Apache-2.0
// Per-run cgroups as a resource-limit mechanism: create with limits, attach, stats, kill, remove.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/host_cgroups.h"

namespace corral::sandbox::cgroup {

struct CgroupPlan {
  std::optional<uint64_t> memory_max;  // bytes; swap is capped too where the host can
  std::optional<uint32_t> pids_max;
};

struct Stats {
  std::optional<uint64_t> peak_memory_bytes;
  bool oom_killed = false;
  bool pids_max_hit = false;
};

// Guard for one run's cgroup directories (one on v2; one per controller hierarchy on v1).
// Move-only; the destructor kills anything left inside and removes the directories.
class Cgroup {
 public:
  Cgroup() = default;
  Cgroup(Cgroup&& other) noexcept;
  Cgroup& operator=(Cgroup&& other) noexcept;
  ~Cgroup();

  Version version() const;  // kV1 also when a plan mixed v1 and v2 controllers
  // v2: an O_DIRECTORY|O_CLOEXEC fd for clone3 CLONE_INTO_CGROUP (kernel 5.7); -1 otherwise.
  int cloneIntoFd() const;
  // Parent side: writes pid into cgroup.procs of every directory. On v1 each call costs one
  // RCU grace period (~5-15 ms, cgroup_threadgroup_rwsem); prefer attachSelf() there.
  Result<void> attach(pid_t pid);
  // Child side, after clone, async-signal-safe: moves the calling process by writing "0" to
  // pre-opened "tasks" (v1) / "cgroup.procs" (v2) files (~0.05 ms on v1), then closes the
  // child's copies of them: an init that never execs must not keep root-opened cgroup files.
  // Returns 0 or an errno; EPERM when called in the process that created the guard.
  // Invariant: the caller is single-threaded (v1 "tasks" moves one thread) and does not
  // share the creator's fd table (no CLONE_FILES).
  int attachSelf() const noexcept;
  Stats stats() const;
  void killAll();  // SIGKILLs every process inside and waits until the cgroup is empty
  bool swapCapped() const { return swap_capped_; }  // false: memory limit leaves swap open
  std::vector<std::string> paths() const;

 private:
  friend struct Builder;  // create() and createBare(), in cgroup.cc
  struct Dir {
    Version version = Version::kNone;
    std::string path;
    UniqueFd fd;       // the directory; holds a shared flock so reapStale leaves it alone
    UniqueFd self_fd;  // what attachSelf() writes to
    bool memory = false;
    bool pids = false;
  };
  void destroy();
  std::vector<Dir> dirs_;
  bool swap_capped_ = false;
  pid_t creator_ = ::getpid();
};

// Creates per-run child cgroups ("corral-" + run_id) under the detected parents for exactly
// the controllers the plan needs, writes the limits, and returns the guard. Fails (never
// silently) when a needed controller has no usable site; the error names the controller and
// why. An empty plan yields an empty guard (version kNone).
Result<Cgroup> create(const CgroupPlan& plan, const HostCgroups& host, std::string_view run_id);

// Removes empty "corral-*" children under the host's parents that no live guard holds
// (left by a corral that was SIGKILLed). Best effort, logs nothing; returns how many.
int reapStale(const HostCgroups& host);

// Shared by cgroup.cc, cgroup_v1.cc, cgroup_v2.cc and host_cgroups.cc; not for other callers.
namespace detail {
// The contents of a small cgroupfs or proc file, nullopt when it cannot be read.
std::optional<std::string> readAt(int dirfd, const char* name);
// One write(2) of value; cgroupfs applies a write whole or fails it with an errno.
Result<void> writeAt(int dirfd, const char* name, std::string_view value);
std::optional<uint64_t> flatKeyed(std::string_view text, std::string_view key);  // "key N" lines
bool hasWord(std::string_view text, std::string_view word);  // "cpu memory pids"
std::vector<pid_t> readPids(int dirfd);                       // cgroup.procs
// A limit-less child of `parent` (test seam; also what create() builds on).
Result<Cgroup> createBare(Version version, const std::string& parent, std::string_view run_id);
}  // namespace detail

}  // namespace corral::sandbox::cgroup
