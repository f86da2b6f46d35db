// SPDX-License-Identifier: Apache-2.0
#include "daemon/fd_receive.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace corral::daemon {

ssize_t recvWithFd(int sock, void* buf, size_t len, UniqueFd* fd, int flags) {
  iovec iov{buf, len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  // Room for a few: what a peer attached beyond the one wanted is received and closed below
  // rather than left to truncation (MSG_CTRUNC), which still installs what fits.
  alignas(cmsghdr) char control[CMSG_SPACE(8 * sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = ::recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n < 0) return n;
  bool taken = false;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int got;
      std::memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
      UniqueFd owned(got);
      if (!taken && fd) *fd = std::move(owned);
      taken = true;
    }
  }
  return n;
}

}  // namespace corral::daemon
