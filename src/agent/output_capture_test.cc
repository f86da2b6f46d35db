// SPDX-License-Identifier: Apache-2.0
#include "agent/output_capture.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "base/sha256.h"

namespace corral::agent {
namespace {

TEST(OutputCapture, KeepsThePrefixCountsAndHashesEverything) {
  auto cap = OutputCapture::start(100);
  ASSERT_TRUE(cap.ok());
  const std::string big(3 << 20, 'x');  // more than a pipe holds: the reader must drain meanwhile
  pid_t pid = ::fork();
  if (pid == 0) {
    ssize_t a = ::write((*cap)->stdoutFd(), big.data(), big.size());
    ssize_t b = ::write((*cap)->stderrFd(), "err", 3);
    ::_exit(a == static_cast<ssize_t>(big.size()) && b == 3 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(status, 0);
  CapturedOutput out = (*cap)->finish();
  EXPECT_EQ(out.out.kept, std::string(100, 'x'));
  EXPECT_EQ(out.out.total, big.size());
  EXPECT_TRUE(out.out.truncated());
  EXPECT_EQ(out.out.sha256, audit::sha256Hex(big));
  EXPECT_EQ(out.err.kept, "err");
  EXPECT_FALSE(out.err.truncated());
  EXPECT_EQ(out.err.sha256, audit::sha256Hex("err"));
}

TEST(OutputCapture, FinishWithNothingWritten) {
  auto cap = OutputCapture::start(10);
  ASSERT_TRUE(cap.ok());
  CapturedOutput out = (*cap)->finish();
  EXPECT_EQ(out.out.total, 0u);
  EXPECT_EQ(out.out.sha256, audit::sha256Hex(""));
}

TEST(OutputCapture, WriteEndsAreCloseOnExec) {
  auto cap = OutputCapture::start(10);
  ASSERT_TRUE(cap.ok());
  EXPECT_TRUE(::fcntl((*cap)->stdoutFd(), F_GETFD) & FD_CLOEXEC);
  EXPECT_GE((*cap)->stdoutFd(), 3);
}

}  // namespace
}  // namespace corral::agent
