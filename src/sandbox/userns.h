// SPDX-License-Identifier: Apache-2.0
// User namespace: the single-uid map that makes the command a non-root uid inside and,
// when corral runs as root, an unprivileged uid on the host.
#pragma once

#include <sys/types.h>

#include "base/result.h"

namespace corral::sandbox::userns {

constexpr uid_t kSandboxUid = 1000;  // the uid/gid the command sees ("corral" in /etc/passwd)
constexpr gid_t kSandboxGid = 1000;
// When corral runs as host root the sandbox must still never be host uid 0 (bubblewrap run
// as root leaves /proc/sys/kernel/core_pattern writable from inside). This uid has no
// passwd entry, owns nothing on the host, and is used by nothing else.
constexpr uid_t kRootModeHostUid = 2'000'000'000;

struct IdMapPlan {
  uid_t host_uid;  // what kSandboxUid maps to
  gid_t host_gid;
};

// The caller's uid/gid when unprivileged; kRootModeHostUid when the caller is root.
IdMapPlan planIdMap(uid_t caller_uid, gid_t caller_gid);

// True when this process's own user namespace refuses setgroups(2) (/proc/self/setgroups is
// "deny"): `unshare --map-root-user` and some container runtimes set that.
bool setgroupsDenied();

// Parent side, after clone and before the child runs on: writes setgroups=deny, uid_map
// and gid_map of the child. Opens /proc/<pid>/... relative to a pre-opened /proc/<pid> fd.
Result<void> writeIdMaps(int proc_pid_dir, const IdMapPlan& plan);

}  // namespace corral::sandbox::userns
