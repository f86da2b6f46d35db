// SPDX-License-Identifier: Apache-2.0
// A session's workspace in the daemon's state directory (SESSION_DIR/workspace): made at
// create, kept across commands and daemon restarts, removed (or kept) at rm.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/result.h"

namespace corral::daemon {

// How the workspace's size is capped on this host. Root with /dev/loop-control and mkfs.ext4:
// an ext4 image of exactly --workspace-size bytes (sparse), loop-mounted on SESSION_DIR/workspace
// in the host's mount namespace, so it outlives both the shim and the daemon. Otherwise no
// mechanism can cap a directory (no quota a non-root daemon may set, no tmpfs that survives its
// shim): a plain directory, only with --allow-weaker workspace-size.
struct WorkspaceMechanism {
  bool capped = false;
  std::string mkfs;         // mkfs.ext4's path when capped
  std::string description;  // for `corral doctor`
};
WorkspaceMechanism workspaceMechanism();

// Makes SESSION_DIR/workspace, owned by uid:gid (what the sandbox's uid maps to). capped:
// the image + loop mount of `bytes`; else a plain directory. Nothing is left on failure.
Result<void> makeWorkspace(int session_dir, const std::string& session_path, uint64_t bytes, bool capped,
                           const WorkspaceMechanism& how, uid_t uid, gid_t gid);

// Unmounts SESSION_DIR/workspace when it is a mount (the loop device then detaches itself,
// once the last sandbox holding it has ended). Idempotent: true when nothing is mounted there.
bool unmountWorkspace(const std::string& session_path);

// SESSION_DIR/workspace is a mount point (a capped workspace that is mounted).
bool workspaceMounted(const std::string& session_path);

// Mounts a kept capped workspace's image again (after the host rebooted, nothing is mounted).
Result<void> mountWorkspaceImage(int session_dir, const std::string& session_path);

}  // namespace corral::daemon
