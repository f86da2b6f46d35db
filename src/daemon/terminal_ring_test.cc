// SPDX-License-Identifier: Apache-2.0
#include "daemon/terminal_ring.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <optional>
#include <vector>
#include <string>

#include <gtest/gtest.h>

namespace corral::daemon {
namespace {

constexpr size_t kRing = Scrollback::kBytes;

std::string numbered(size_t from, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (from + i) % 26);
  return s;
}

class TerminalRing : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/corral-ring-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    (void)::unlink(path().c_str());
    (void)::unlink((dir_ + "/target").c_str());
    (void)::rmdir(path().c_str());
    (void)::rmdir(dir_.c_str());
  }
  std::string path() const { return dir_ + "/" + RingFile::kName; }
  // A saved ring of what s holds (the file kept: the RingFile's path forgotten by a move-out).
  std::optional<RingFile::Saved> saved() {
    auto got = RingFile::load(dir_);
    EXPECT_TRUE(got) << got.error().message();
    return got ? *got : std::nullopt;
  }
  std::string dir_;
};

TEST_F(TerminalRing, NoFileIsNoScrollback) { EXPECT_FALSE(saved().has_value()); }

TEST_F(TerminalRing, AMirrorIsLoadedAsTheRingHeldIt) {
  Scrollback s;
  auto f = RingFile::create(dir_);
  ASSERT_TRUE(f) << f.error().message();
  s.append("hello ");
  ASSERT_TRUE(f->mirror(s));
  s.append("world");
  ASSERT_TRUE(f->mirror(s));
  struct stat st {};
  ASSERT_EQ(::stat(path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(static_cast<size_t>(st.st_size), RingFile::kFileBytes);
  auto got = saved();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->bytes, "hello world");
  EXPECT_EQ(got->dropped, 0u);
  f->remove();
  EXPECT_NE(::access(path().c_str(), F_OK), 0) << "remove() left the file";
}

TEST_F(TerminalRing, TheFileStaysItsSizeAndHoldsTheNewestBytesInOrder) {
  Scrollback s;
  auto f = RingFile::create(dir_);
  ASSERT_TRUE(f);
  size_t written = 0;
  while (written < 5 * kRing + 77) {  // across the wrap many times, in a pty's pieces
    s.append(numbered(written, 4093));
    written += 4093;
    if (written % 3 == 0 || written > 5 * kRing) {  // mirrors skip pieces too
      ASSERT_TRUE(f->mirror(s));
    }
  }
  ASSERT_TRUE(f->mirror(s));
  struct stat st {};
  ASSERT_EQ(::stat(path().c_str(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), RingFile::kFileBytes) << "the ring file grew";
  auto got = saved();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->bytes, numbered(written - kRing, kRing));
  EXPECT_EQ(got->dropped, written - kRing);
  EXPECT_EQ(s.tail(kRing), got->bytes);
}

TEST_F(TerminalRing, AMirrorCutShortDropsTheBytesItMayHaveOverwritten) {
  Scrollback s;
  auto f = RingFile::create(dir_);
  ASSERT_TRUE(f);
  s.append(numbered(0, kRing + 100));
  ASSERT_TRUE(f->mirror(s));
  // The daemon died after writing intent (and maybe some data), before total: intent = total + 1000.
  UniqueFd fd(::open(path().c_str(), O_RDWR | O_CLOEXEC));
  const uint64_t intent = kRing + 100 + 1000;
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(intent >> (8 * i) & 0xff);
  ASSERT_EQ(::pwrite(fd.get(), b, 8, 24), 8);
  const std::string junk(1000, '#');
  ASSERT_EQ(::pwrite(fd.get(), junk.data(), junk.size(), static_cast<off_t>(RingFile::kHeaderBytes + (kRing + 100) % kRing)), 1000);
  auto got = saved();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->bytes, numbered(1100, kRing - 1000)) << "bytes the cut-short write overwrote were shown";
  EXPECT_EQ(got->dropped, 1100u);
}

// Each hostile file is refused in one line, never read as a ring (and never followed).
TEST_F(TerminalRing, AFileThatIsNotOursIsRefused) {
  // A ring file as a killed daemon leaves it: its bytes copied out before the RingFile
  // (which removes its file) goes, and written back.
  auto make = [&] {
    std::string bytes(RingFile::kFileBytes, '\0');
    {
      Scrollback s;
      auto f = RingFile::create(dir_);
      ASSERT_TRUE(f);
      s.append("saved");
      ASSERT_TRUE(f->mirror(s));
      UniqueFd fd(::open(path().c_str(), O_RDONLY | O_CLOEXEC));
      ASSERT_EQ(::pread(fd.get(), bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
    }
    UniqueFd fd(::open(path().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    ASSERT_EQ(::write(fd.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  };
  struct Case {
    const char* what;
    std::function<void()> spoil;
    const char* says;
  };
  const std::string p = path();
  std::vector<Case> cases = {
      {"truncated", [&] { ASSERT_EQ(::truncate(p.c_str(), 100), 0); }, "bytes, not"},
      {"oversized", [&] { ASSERT_EQ(::truncate(p.c_str(), 1 << 20), 0); }, "bytes, not"},
      {"bad magic", [&] { UniqueFd fd(::open(p.c_str(), O_WRONLY | O_CLOEXEC)); ASSERT_EQ(::pwrite(fd.get(), "XXXX", 4, 0), 4); }, "not a terminal ring"},
      {"total past intent", [&] { UniqueFd fd(::open(p.c_str(), O_WRONLY | O_CLOEXEC)); ASSERT_EQ(::pwrite(fd.get(), "\xff\xff", 2, 16), 2); }, "inconsistent"},
      {"mode 0644", [&] { ASSERT_EQ(::chmod(p.c_str(), 0644), 0); }, "mode 0644"},
      {"hard link", [&] { ASSERT_EQ(::link(p.c_str(), (dir_ + "/target").c_str()), 0); }, "2 links"},
      {"symlink", [&] { ASSERT_EQ(::rename(p.c_str(), (dir_ + "/target").c_str()), 0); ASSERT_EQ(::symlink("target", p.c_str()), 0); }, "symbolic link"},
      {"fifo", [&] { ASSERT_EQ(::unlink(p.c_str()), 0); ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0); }, "not a regular file"},
      {"directory", [&] { ASSERT_EQ(::unlink(p.c_str()), 0); ASSERT_EQ(::mkdir(p.c_str(), 0700), 0); }, "not a regular file"},
  };
  if (::geteuid() == 0)  // another owner needs root to make
    cases.push_back({"another owner", [&] { ASSERT_EQ(::chown(p.c_str(), 65534, 65534), 0); }, "owned by uid 65534"});
  for (const Case& c : cases) {
    make();
    c.spoil();
    auto got = RingFile::load(dir_);
    ASSERT_FALSE(got) << c.what << ": loaded";
    EXPECT_NE(got.error().message().find(c.says), std::string::npos) << c.what << ": " << got.error().message();
    (void)::unlink(p.c_str());
    (void)::rmdir(p.c_str());
    (void)::unlink((dir_ + "/target").c_str());
  }
  // Control: the same file unspoilt loads.
  make();
  auto ok = RingFile::load(dir_);
  ASSERT_TRUE(ok && ok->has_value());
  EXPECT_EQ((*ok)->bytes, "saved");
}

TEST_F(TerminalRing, CreateReplacesALinkInsteadOfWritingThroughIt) {
  const std::string target = dir_ + "/target";
  { UniqueFd fd(::open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600)); ASSERT_EQ(::write(fd.get(), "precious", 8), 8); }
  ASSERT_EQ(::symlink("target", path().c_str()), 0);
  auto f = RingFile::create(dir_);
  ASSERT_TRUE(f) << f.error().message();
  struct stat st {};
  ASSERT_EQ(::lstat(path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode)) << "the link was kept";
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 8) << "the link's target was written";
}

}  // namespace
}  // namespace corral::daemon
