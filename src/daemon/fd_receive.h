// SPDX-License-Identifier: Apache-2.0
// Receiving one message and at most one passed descriptor (SCM_RIGHTS) on a UNIX socket: the
// daemon from a shim, a shim from its init (base/fd_passing.h is the sending side).
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "base/unique_fd.h"

namespace corral::daemon {

// recvmsg into buf (at most len bytes), close-on-exec, with flags added (MSG_DONTWAIT). The
// first passed descriptor goes to *fd (closed if fd is null); any further ones a peer attached
// are closed, so a peer cannot make this process hold descriptors it did not ask for.
// Returns recvmsg's result (-1 with errno).
ssize_t recvWithFd(int sock, void* buf, size_t len, UniqueFd* fd, int flags = 0);

}  // namespace corral::daemon
