// SPDX-License-Identifier: Apache-2.0
// SandboxSpec: what one sandboxed command gets (built by `exec` flags or a manifest), and
// RunReport: what happened. Plain values; the backend reads a spec and never edits it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace corral::sandbox {

// Limits a caller may ask for. Which host mechanism enforces each is decided by the
// backend (limit_plan.h) and reported; a requested limit nothing can enforce refuses the
// run unless named in allow_weaker.
enum class Limit { kMemory, kPids, kCpuTime, kTimeout, kFileSize, kOpenFiles, kTmpSize, kWorkspaceSize };
const char* limitName(Limit limit);
std::optional<Limit> limitFromName(std::string_view name);

struct RoBind {
  std::string host;     // absolute host path, opened (and its symlinks followed) by the operator
  std::string sandbox;  // absolute path inside; validated by policy::path (no "..", not reserved)
};

struct Limits {
  std::optional<uint64_t> memory_bytes;      // none: unlimited
  uint32_t pids = 4096;                      // always on: a fork bomb is held by default
  std::optional<std::chrono::milliseconds> cpu_time;
  std::optional<std::chrono::milliseconds> timeout;
  uint64_t file_size_bytes = 1ull << 30;     // RLIMIT_FSIZE
  uint32_t open_files = 1024;                // RLIMIT_NOFILE
  uint64_t tmp_bytes = 256ull << 20;         // /tmp and /dev/shm tmpfs
  uint64_t workspace_bytes = 1ull << 30;     // /workspace tmpfs
  std::vector<Limit> allow_weaker;           // accepted downgrades, by name
};

// The command's fds 0, 1 and 2. -1: corral's own. Any other value is an fd of the caller
// (3 or above, not a directory) that init places on that number before the command starts,
// e.g. a pipe the runner reads the command's output from.
struct Stdio {
  int in = -1;
  int out = -1;
  int err = -1;
};

// --net proxy: init listens on 127.0.0.1:port inside the sandbox and hands every accepted
// connection to the host over channel (a UNIX SOCK_SEQPACKET socket of the caller; the
// other end belongs to the egress proxy). channel -1: loopback only, nothing listens.
inline constexpr uint16_t kSandboxProxyPort = 3128;
struct NetProxy {
  int channel = -1;
  uint16_t port = kSandboxProxyPort;
};

struct SandboxSpec {
  std::vector<std::string> argv;             // argv[0] resolved by PATH inside the sandbox
  std::vector<std::string> env;              // complete environment, "K=V"; nothing else passes
  std::optional<std::string> workspace;      // host dir staged in as /workspace; none: empty. An absolute
                                             // path without symlinks (workspace::openHostDir says why)
  // Staged: only what a runner task declares (its input patterns and outputs, and the
  // directories they lie in); none: the whole workspace. A spawned task narrower than the
  // run sees no more than it declares, in its commands as in its read tool.
  struct StageOnly {
    std::vector<std::string> inputs, outputs;
  };
  std::optional<StageOnly> stage_only;
  std::vector<std::string> outputs;          // workspace-relative, validated by policy::path
  std::vector<RoBind> ro_binds;
  // Host directories bound read-write, each at a path beneath /workspace (the tree Landlock
  // leaves writable): `wasm run --dir HOST:GUEST`'s preopens. exec has no option for it.
  std::vector<RoBind> rw_binds;
  Limits limits;
  Stdio stdio;
  NetProxy proxy;
  // A host directory bound read-write as /workspace instead of the tmpfs: a daemon session's,
  // which lives in the daemon's state dir and outlives the sandbox (its cap is the directory's own).
  std::optional<std::string> workspace_bind;
  // Host path of a KVM device node (char 10:232) mounted as /dev/kvm: set only by the VM
  // backend for QEMU's jail under KVM (vm_backend.cc); exec has no option for it.
  std::optional<std::string> kvm_device;
};

enum class KilledBy { kNone, kTimeout, kMemory, kPids, kCpuTime, kSignal };
const char* killedByName(KilledBy k);

struct LimitUse {
  Limit limit;
  std::optional<uint64_t> value;  // bytes, count or milliseconds; none = unlimited
  std::string mechanism;          // "cgroup-v2", "cgroup-v1", "rlimit", "tmpfs", "timer", "none"
};

struct OutputResult {
  std::string path;
  // kWithheld: fine itself, not copied because another output was refused (all or none).
  enum class Status { kCopied, kMissing, kRefused, kWithheld } status = Status::kMissing;
  std::string reason;  // for refusals: "symlink", "hard link", "fifo", ...
  uint64_t bytes = 0;
};

struct RunReport {
  int exit_code = 125;               // what corral exits with
  std::optional<int> command_status; // the command's own exit status, when it exited
  std::optional<int> signal;         // the signal that ended it, when one did
  KilledBy killed_by = KilledBy::kNone;
  double wall_ms = 0;
  double cpu_user_ms = 0;
  double cpu_sys_ms = 0;
  std::optional<uint64_t> peak_memory_bytes;
  std::string cgroup;                // "v2", "v1" or "none"
  int landlock_abi = 0;              // 0: not applied
  std::vector<LimitUse> limits;
  std::vector<OutputResult> outputs;
  std::string error;                 // one line when corral failed
};

}  // namespace corral::sandbox
