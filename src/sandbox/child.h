// SPDX-License-Identifier: Apache-2.0
// The sandbox's processes: init (pid 1 of the new pid namespace: finishes the mount
// namespace, forks the command, reaps, forwards signals) and the command's own pre-exec
// setup. Everything they read is computed by the parent before clone.
#pragma once

#include <sched.h>

#include <cstddef>

#include "sandbox/cgroup.h"
#include "sandbox/mountns.h"
#include "sandbox/rlimits.h"
#include "sandbox/seccomp.h"

namespace corral::sandbox::child {

struct Context {
  int sock = -1;                    // the init's end of the sync socketpair
  int stdio[3] = {-1, -1, -1};      // fds init moves onto 0, 1, 2 first; -1: keep corral's
  int proxy_channel = -1;           // --net proxy: the UNIX socket accepted connections go out through
  unsigned short proxy_port = 0;    // where init listens on the sandbox's loopback
  const mountns::Plan* mounts = nullptr;
  int* slot_fds = nullptr;          // mounts->slots entries
  const char* workspace_size = nullptr;  // "size=<bytes>"
  bool send_workspace = false;      // the parent stages files in or copies outputs back
  bool wait_for_go = false;         // the parent stages the workspace before the command starts
  const cgroup::Cgroup* cgroup = nullptr;  // v1: init moves itself in first (attachSelf)
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* const* exec_paths = nullptr;  // argv[0] resolved against PATH, in order
  size_t exec_path_count = 0;
  rlimits::Plan rlimits;
  const seccomp::Program* seccomp = nullptr;
  int landlock_abi = 0;             // 0: not applied
  bool kvm_device = false;          // /dev/kvm is mounted (SandboxSpec::kvm_device): Landlock opens it
  // corral's CPUs, read before the clone: init's own mask may be narrowed for a moment when
  // it first runs (cpu_placement.h), so the helper's placement starts from these.
  cpu_set_t caller_cpus{};
  bool caller_cpus_known = false;
  size_t stamp_base = 0;            // index of the first milestone slot
  uint64_t* stamps = nullptr;       // --timing: a MAP_SHARED page, one slot per mount step,
                                    // then kMilestones slots (see Milestone)
  // A session (session_init.h): init starts no command of its own and serves the shim's
  // spawn requests instead. Per command: its stdio (placed on 0..2) and its cwd.
  bool session = false;
  int cmd_stdio[3] = {-1, -1, -1};
  bool cmd_tty = false;             // cmd_stdio is a terminal: it becomes the controlling one
  const char* cwd = nullptr;        // none: /workspace
};

// Child milestones stamped after the mount steps when --timing is on.
enum Milestone : size_t {
  kMsMapsReady, kMsTmpfs, kMsMounts, kMsNetwork, kMsForked, kMsExec, kMsCommandReaped, kMsReported, kMilestones
};

// Never returns. Async-signal-safe throughout: no allocation, no logging, no stdio.
[[noreturn]] void runInit(const Context& ctx);

// A session's init starts each command as exec's init starts its one: the same setup
// (setsid, caps, Landlock, rlimits, seccomp) from ctx. Returns the pid, or -errno.
long spawnSessionCommand(const Context& ctx);

}  // namespace corral::sandbox::child
