// SPDX-License-Identifier: Apache-2.0
// Who is on the other end of an API connection, from SO_PEERCRED.
#pragma once

#include <sys/types.h>

namespace corral::daemon {

struct Peer {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
  // Root sees every session; anyone else only their own.
  bool mayAccess(int64_t owner_uid) const { return uid == 0 || static_cast<int64_t>(uid) == owner_uid; }
};

}  // namespace corral::daemon
