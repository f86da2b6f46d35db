// SPDX-License-Identifier: Apache-2.0
// SEQPACKET messages with SCM_RIGHTS.
#include "sandbox/sync_channel.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/fd_passing.h"

namespace corral::sandbox::sync {

const char* childStepName(int32_t step) {
  switch (step) {
    case kStepSync: return "wait for parent";
    case kStepDumpable: return "prctl PR_SET_DUMPABLE";
    case kStepWorkspaceTmpfs: return "create /workspace tmpfs";
    case kStepHostname: return "sethostname";
    case kStepLoopback: return "bring up loopback";
    case kStepNetns: return "network namespace";
    case kStepCgroupNs: return "unshare cgroup namespace";
    case kStepFork: return "fork command";
    case kStepSetsid: return "setsid";
    case kStepChdir: return "chdir /workspace";
    case kStepRlimits: return "setrlimit";
    case kStepCaps: return "drop capabilities";
    case kStepLandlock: return "landlock";
    case kStepSeccomp: return "install seccomp filter";
    case kStepExec: return "exec";
    case kStepSignals: return "signal setup";
    case kStepCredentials: return "switch to the sandbox uid";
    case kStepCgroupAttach: return "join cgroup";
    default: return "setup";
  }
}

int send(int sock, const Message& m, int fd) { return sendWithFd(sock, &m, sizeof(m), fd); }

int recv(int sock, Message* m, int* fd, int flags) {
  if (fd) *fd = -1;
  iovec iov{m, sizeof(*m)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  // A peer that closed with messages of ours unread leaves ECONNRESET on this end, and a
  // SEQPACKET receive reports it first (once: reading clears it), ahead of the messages the
  // peer sent before it went. Those are what say why it went (a setup failure), so read on.
  bool reset_reported = false;
  for (;;) {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | flags);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ECONNRESET && !reset_reported) {
      reset_reported = true;
      continue;
    }
    break;
  }
  if (n == 0) return EPIPE;
  if (n < 0) return errno;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int got;
      ::memcpy(&got, CMSG_DATA(c), sizeof(int));
      if (fd) *fd = got;
      else if (!(flags & MSG_PEEK)) ::close(got);
    }
  }
  return n == static_cast<ssize_t>(sizeof(*m)) ? 0 : EIO;
}

}  // namespace corral::sandbox::sync
