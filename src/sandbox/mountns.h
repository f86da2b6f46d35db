// SPDX-License-Identifier: Apache-2.0
// Mount namespace: the sandbox's file system view, as a plan of steps computed before
// clone (every path string included) and executed in the child with syscalls only.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "base/result.h"
#include "sandbox/spec.h"

namespace corral::sandbox::mountns {

enum class Op : uint8_t {
  kMakePrivate,  // recursive MS_PRIVATE on "/": nothing propagates back to the host
  kCloneTree,    // slot <- open_tree(a, CLONE|RECURSIVE), then mount_setattr(flags); never a namespace handle
  kCheckReach,   // a must resolve for the current (sandbox) credentials: faccessat(F_OK, AT_EACCESS)
  kRootTmpfs,    // mount the new root tmpfs on a (a host dir hidden only in this namespace)
  kMkdir,        // mkdir(a, flags as mode)
  kTouch,        // create empty file a: a mount point for a file
  kSymlink,      // symlink a -> b (a is the link path, b the target)
  kWriteFile,    // write b (text) into new file a, mode flags
  kAttach,       // move_mount(slot -> a)
  kTmpfs,        // mount tmpfs on a with options b, mount flags in flags
  kProc,         // mount a fresh procfs on a (the caller is pid 1 of the new pid namespace)
  kSysctl,       // write b into the existing /proc/sys file a
  kBindSelfRo,   // re-attach a onto itself read-only (a clone with RDONLY set)
  kMaskFile,     // bind b (the sandbox's /dev/null) over file a
  kMaskDir,      // mount an empty read-only tmpfs over directory a
  kSetReadOnly,  // mount_setattr(a, RDONLY), not recursive
  kAttachWorkspace,  // move_mount(workspace fd -> a)
  kPivot,        // chdir(a); pivot_root(".", "."); detach the old root; chdir("/")
  kCallback,     // run execute()'s callback: where init joins the sandbox's network namespace
  kOpenSysctl,   // slot <- open(a, O_WRONLY): an existing /proc/sys file, written later (kWriteSlot)
  kWriteSlot,    // write b into the slot's file, then close it
  kDevpts,       // mount the sandbox's own devpts instance on a (devpts.h)
};

struct Step {
  Op op;
  const char* a = nullptr;
  const char* b = nullptr;
  uint64_t flags = 0;
  int slot = -1;
  bool optional = false;  // ENOENT is not an error (a /proc entry this kernel lacks)
  const char* what = "";  // for the one-line error: "mount /proc"
};

struct Plan {
  std::deque<std::string> strings;  // owns every string the steps point at (stable addresses)
  std::vector<Step> steps;
  int slots = 0;
  std::string root;  // where the new root is assembled before pivot_root
  // The leading steps init may run before its id maps exist (making "/" private, cloning the
  // fixed host sources): they create no file, and they overlap the parent's writing of the
  // maps. But a path walk before the maps is checked against the caller's uid, and a root
  // caller's is host uid 0, whose owner bits open root-only directories the sandbox uid could
  // not cross: for a root caller the plan repeats each such walk after the maps (kCheckReach),
  // so a source the sandbox uid cannot reach still fails the launch. --ro-bind sources are
  // cloned here too, as the caller, and are not re-checked: naming one is the operator's
  // decision (what lies inside is still read as the sandbox uid).
  size_t before_maps = 0;
};

struct HostLayout {
  std::string staging_dir;  // an existing host dir to mount the new root over, e.g. /tmp
};

// Parent side: the plan for a spec. Reads the host's /bin, /lib*, /sbin layout (symlinks on
// merged-/usr distros, directories otherwise) and the type of each --ro-bind source.
Result<Plan> buildPlan(const SandboxSpec& spec, const std::string& etc_passwd, const std::string& etc_group);

// Child side, async-signal-safe: runs the steps. On failure returns the errno and sets
// *failed to the index of the step. ws_fd is the detached workspace mount (or -1).
// stamps, when not null, receives CLOCK_MONOTONIC ns after each step (for --timing).
// callback, run at the plan's kCallback step, returns 0 or errno.
struct Callback {
  int (*fn)(void* arg) = nullptr;
  void* arg = nullptr;
};
// Runs steps [begin, end): init runs [0, before_maps) and then [before_maps, size).
int execute(const Plan& plan, size_t begin, size_t end, int ws_fd, int* slot_fds, size_t* failed, uint64_t* stamps,
            Callback callback);

// Child side: a detached tmpfs (fsopen/fsmount) of `size` bytes, root mode 0755, nosuid,
// nodev. Returns the mount fd or -errno. size_option is "size=<bytes>" built before clone.
int makeDetachedTmpfs(const char* size_option);

}  // namespace corral::sandbox::mountns
