// SPDX-License-Identifier: Apache-2.0
// Passing a descriptor over a UNIX socket (SCM_RIGHTS): the sandbox's sync channel, init's
// hand-over of accepted connections to the egress proxy, and the tests that play init.
#pragma once

#include <cstddef>

namespace corral {

// Sends len bytes as one message with fd attached (fd < 0: none), retrying EINTR, never
// raising SIGPIPE. Returns 0, or an errno value (EIO for a short send). Async-signal-safe and
// allocation-free: the sandbox's init calls it between clone and exec.
int sendWithFd(int sock, const void* data, size_t len, int fd);
// The same with nfds descriptors (at most kMaxPassedFds) in one SCM_RIGHTS message.
inline constexpr size_t kMaxPassedFds = 8;
int sendWithFds(int sock, const void* data, size_t len, const int* fds, size_t nfds);

}  // namespace corral
