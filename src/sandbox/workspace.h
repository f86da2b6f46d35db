// SPDX-License-Identifier: Apache-2.0
// /workspace staging (host dir -> the sandbox's tmpfs) and copy-back of declared outputs
// (tmpfs -> host dir). Both run in the parent, through the mount fd the init passed up.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.h"
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

// Copies host_dir recursively into the tmpfs whose root is ws_root (an fd from fsmount).
// Regular files (setuid/setgid bits stripped), directories and symlinks (as links, never
// followed); ENOSPC is reported as the --workspace-size limit.
Result<StageStats> stage(const std::string& host_dir, int ws_root, const Owner& owner);

// Copies each declared output from the tmpfs back into host_dir. Each source is opened
// with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) and must be
// a regular file with one link; the destination is written to a temp file beside it and
// renamed into place, its parents resolved the same way (created when missing).
std::vector<OutputResult> copyBack(int ws_root, const std::string& host_dir, const std::vector<std::string>& outputs);

}  // namespace corral::sandbox::workspace
