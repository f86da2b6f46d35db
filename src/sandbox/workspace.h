// SPDX-License-Identifier: Apache-2.0
// /workspace staging (host dir -> the sandbox's tmpfs) and copy-back of declared outputs
// (tmpfs -> host dir). Both run in the parent, through the mount fd the init passed up.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/spec.h"

namespace corral::sandbox::workspace {

// When corral runs as root, files it creates in the sandbox's tmpfs must belong to the
// sandbox's (unprivileged) host uid: the kernel refuses unmapped owners (EOVERFLOW).
struct Owner {
  uid_t uid;
  gid_t gid;
  bool switch_fsuid;  // root caller: create as uid/gid via setfsuid, read sources as root
};

struct StageStats {
  uint64_t files = 0;
  uint64_t bytes = 0;
  uint64_t skipped = 0;  // sockets, FIFOs, devices: never staged
};

// Opens the host workspace once, for staging and for copy-back: path must be absolute and
// free of symlinks (the caller resolved it, as `corral exec` does with realpath). A component
// that became a symlink since is refused (ELOOP) instead of followed, and a directory swapped
// for another after the open is not looked up again: a workspace another user can rename
// cannot steer what corral reads, or where a root caller writes the outputs.
Result<UniqueFd> openHostDir(const std::string& path);

// Copies host_dir (a directory fd) recursively into the tmpfs whose root is ws_root (an fd
// from fsmount). Regular files (setuid/setgid bits stripped), directories and symlinks (as
// links, never followed); ENOSPC is reported as the --workspace-size limit. A caller's
// RLIMIT_FSIZE is an error (EFBIG), not a SIGXFSZ that kills corral.
// With only, just the files it declares and the directories on their way (SandboxSpec::stage_only).
Result<StageStats> stage(int host_dir, int ws_root, const Owner& owner, const SandboxSpec::StageOnly* only = nullptr);

// Copies each declared output from the tmpfs back into host_dir (a directory fd), all or
// none. Each source is opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
// RESOLVE_NO_MAGICLINKS) and must be a regular file with one link; the destination is written
// to a temp file beside it and swapped into place, its parents resolved the same way (created
// when missing). One refused output withholds the rest and puts back what was replaced.
std::vector<OutputResult> copyBack(int ws_root, int host_dir, const std::vector<std::string>& outputs);

// SIGXFSZ ignored while it lives (process-wide), so that a write past the caller's
// RLIMIT_FSIZE fails with EFBIG and is reported, instead of killing corral.
class IgnoreSigxfsz {
 public:
  IgnoreSigxfsz();
  ~IgnoreSigxfsz();
  IgnoreSigxfsz(const IgnoreSigxfsz&) = delete;
  IgnoreSigxfsz& operator=(const IgnoreSigxfsz&) = delete;

 private:
  struct sigaction old_{};
};

}  // namespace corral::sandbox::workspace
