// SPDX-License-Identifier: Apache-2.0
#include "base/fd_passing.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

namespace corral {

int sendWithFds(int sock, const void* data, size_t len, const int* fds, size_t nfds) {
  if (nfds > kMaxPassedFds) return EINVAL;
  iovec iov{const_cast<void*>(data), len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(kMaxPassedFds * sizeof(int))];
  if (nfds > 0) {
    ::memset(control, 0, sizeof(control));
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    ::memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
  }
  for (;;) {
    ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(len)) return 0;
    if (n < 0 && errno == EINTR) continue;
    return n < 0 ? errno : EIO;
  }
}

int sendWithFd(int sock, const void* data, size_t len, int fd) {
  return fd >= 0 ? sendWithFds(sock, data, len, &fd, 1) : sendWithFds(sock, data, len, nullptr, 0);
}

}  // namespace corral
