// SPDX-License-Identifier: Apache-2.0
// The record of a session frozen in place: which cgroup v2 limits cgroup holds its init,
// kept in the session's directory so a restarted daemon finds the cgroup again without
// asking a pid (a reused pid could name another session's cgroup).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace corral::daemon {

// "corral-" + 16 lowercase hex digits: the name the sandbox gives a run's limits cgroup
// (sandbox/cgroup.h, "corral-" + randomHex16()).
bool isLimitsCgroupName(std::string_view name);

// The shape a record must have: a cgroup path as /proc/PID/cgroup's "0::" line gives it
// ("/corral/corral-0123456789abcdef"): absolute, no empty, "." or ".." component, printable
// ASCII only, and a last component that is a limits cgroup's name.
Result<void> checkLimitsCgroupPath(std::string_view path);

// The directory MOUNT + path, once checkLimitsCgroupPath passed and it is a directory (not
// followed through a symlink) on a cgroup2 file system with a cgroup.freeze. ENOENT when
// the cgroup is gone (its owner removed it); any other failure refuses it.
Result<std::string> openLimitsCgroup(const std::string& mount, const std::string& path);

// SESSION_DIR/freezer-cgroup, written atomically (tmp, fsync, rename, fsync dir).
Result<void> writeFreezerRecord(const std::string& session_dir, const std::string& path);
// The recorded path, nullopt when there is no record; an error when the file is not a
// small regular file of one line (it is never followed through a symlink).
Result<std::optional<std::string>> readFreezerRecord(const std::string& session_dir);
void eraseFreezerRecord(const std::string& session_dir);

}  // namespace corral::daemon
