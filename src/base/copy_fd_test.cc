// SPDX-License-Identifier: Apache-2.0
// copyFdContents: the same bytes within a file system and across two (where the kernel's
// copy_file_range refuses), and a file shorter than asked is an error.
#include "base/copy_fd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "base/unique_fd.h"

namespace corral {
namespace {

std::string makeDir(const char* under) {
  std::string t = std::string(under) + "/corral-copy-XXXXXX";
  return ::mkdtemp(t.data()) ? t : "";
}

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + i / 4096) & 0xff);
  return s;
}

std::string readAll(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

struct Pair {
  UniqueFd in, out;
};

Pair open2(const std::string& src, const std::string& dst, const std::string& bytes) {
  {
    UniqueFd w(::open(src.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    EXPECT_EQ(::write(w.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  return {UniqueFd(::open(src.c_str(), O_RDONLY | O_CLOEXEC)), UniqueFd(::open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600))};
}

dev_t deviceOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_dev : 0;
}

TEST(CopyFd, SameFileSystemCopiesEveryByte) {
  const std::string d = makeDir("/var/tmp");
  ASSERT_FALSE(d.empty());
  const std::string bytes = pattern(3 * 1024 * 1024 + 17);
  Pair p = open2(d + "/a", d + "/b", bytes);
  ASSERT_TRUE(copyFdContents(p.in.get(), p.out.get(), static_cast<off_t>(bytes.size()), "a"));
  EXPECT_EQ(readAll(d + "/b"), bytes);
  (void)std::system(("rm -rf " + d).c_str());
}

TEST(CopyFd, AcrossFileSystemsWhereTheKernelRefusesFallsBackToReadAndWrite) {
  const std::string a = makeDir("/var/tmp"), b = makeDir("/dev/shm");
  if (a.empty() || b.empty() || deviceOf(a) == deviceOf(b)) GTEST_SKIP() << "needs /var/tmp and /dev/shm on two file systems";
  const std::string bytes = pattern(2 * 1024 * 1024 + 5);
  {
    // The control: the kernel itself refuses this copy, so the fallback is what is tested.
    Pair c = open2(a + "/c", b + "/c", "x");
    const ssize_t n = ::copy_file_range(c.in.get(), nullptr, c.out.get(), nullptr, 1, 0);
    if (n >= 0) GTEST_SKIP() << "this kernel copies between these file systems itself";
    EXPECT_TRUE(errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP) << errno;
  }
  Pair p = open2(a + "/a", b + "/b", bytes);
  auto r = copyFdContents(p.in.get(), p.out.get(), static_cast<off_t>(bytes.size()), "a");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(readAll(b + "/b"), bytes);
  (void)std::system(("rm -rf " + a + " " + b).c_str());
}

TEST(CopyFd, AFileShorterThanAskedIsAnError) {
  const std::string a = makeDir("/var/tmp"), b = makeDir("/dev/shm");
  ASSERT_FALSE(a.empty());
  for (const std::string& to : {a, b.empty() ? a : b}) {
    Pair p = open2(a + "/s", to + "/t", "short");
    auto r = copyFdContents(p.in.get(), p.out.get(), 100, "s");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("ended early"), std::string::npos) << r.error().message();
    ::unlink((to + "/t").c_str());
  }
  (void)std::system(("rm -rf " + a + " " + b).c_str());
}

}  // namespace
}  // namespace corral
