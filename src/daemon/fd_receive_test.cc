// SPDX-License-Identifier: Apache-2.0
#include "daemon/fd_receive.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace corral::daemon {
namespace {

// Sends "hi" with the descriptors fds attached (one SCM_RIGHTS message).
void sendFds(int sock, const std::vector<int>& fds) {
  iovec iov{const_cast<char*>("hi"), 2};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(fds.size() * sizeof(int)));
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  }
  ASSERT_EQ(::sendmsg(sock, &msg, MSG_NOSIGNAL), 2);
}

// Whether fd is open in this process.
bool isOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

// How many descriptors this process has open.
int openCount() {
  int n = 0;
  for (int fd = 0; fd < 1024; ++fd) n += isOpen(fd);
  return n;
}

struct Pair {
  int a = -1, b = -1;
  Pair() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0) a = sv[0], b = sv[1];
  }
  ~Pair() {
    ::close(a);
    ::close(b);
  }
};

TEST(FdReceive, TheFirstDescriptorIsTakenAndEveryFurtherOneClosed) {
  Pair p;
  ASSERT_GE(p.a, 0);
  const int probe = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(probe, 0);
  sendFds(p.a, {probe, probe, probe, probe});
  const int before = openCount();
  char buf[8];
  UniqueFd got;
  ASSERT_EQ(recvWithFd(p.b, buf, sizeof buf, &got), 2);
  ASSERT_TRUE(got.valid());
  EXPECT_TRUE(::fcntl(got.get(), F_GETFD) & FD_CLOEXEC) << "a received descriptor must be close-on-exec";
  EXPECT_EQ(openCount(), before + 1) << "a peer attaching four descriptors left more than the one taken open";
  ::close(probe);
}

// Control: a plain recvmsg with room for one int (CMSG_SPACE(sizeof(int)), which the
// alignment makes room for two) installs more than one of them, so the count above can fail.
TEST(FdReceive, ControlARecvmsgSizedForOneInstallsMore) {
  Pair p;
  ASSERT_GE(p.a, 0);
  const int probe = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  sendFds(p.a, {probe, probe, probe, probe});
  const int before = openCount();
  char buf[8];
  iovec iov{buf, sizeof buf};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ASSERT_EQ(::recvmsg(p.b, &msg, MSG_CMSG_CLOEXEC), 2);
  const int installed = openCount() - before;
  EXPECT_GT(installed, 1) << "control: this kernel installed only " << installed << " descriptor(s)";
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  ASSERT_NE(c, nullptr);
  for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++i) {
    int fd;
    std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
    ::close(fd);
  }
  ::close(probe);
}

TEST(FdReceive, WithoutAPlaceForItThePassedDescriptorIsClosed) {
  Pair p;
  ASSERT_GE(p.a, 0);
  const int probe = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  sendFds(p.a, {probe});
  const int before = openCount();
  char buf[8];
  ASSERT_EQ(recvWithFd(p.b, buf, sizeof buf, nullptr), 2);
  EXPECT_EQ(openCount(), before) << "the received descriptor was kept though nobody asked for it";
  ::close(probe);
}

TEST(FdReceive, AMessageWithoutDescriptorsLeavesFdEmpty) {
  Pair p;
  ASSERT_GE(p.a, 0);
  sendFds(p.a, {});
  char buf[8];
  UniqueFd got;
  ASSERT_EQ(recvWithFd(p.b, buf, sizeof buf, &got, MSG_DONTWAIT), 2);
  EXPECT_FALSE(got.valid());
  EXPECT_EQ(std::string(buf, 2), "hi");
}

}  // namespace
}  // namespace corral::daemon
