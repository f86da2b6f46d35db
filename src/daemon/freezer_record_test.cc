// SPDX-License-Identifier: Apache-2.0
// daemon.paused-session-stopped: a freezer record (the limits cgroup a session is frozen in)
// is taken only in the shape the sandbox gives, so a damaged or planted record freezes nothing.
#include "daemon/freezer_record.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace corral::daemon {
namespace {

constexpr char kGood[] = "/corral/corral-0123456789abcdef";

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/corral-freezer-record-XXXXXX";
    if (char* made = ::mkdtemp(tmpl)) path = made;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

TEST(DaemonPausedSessionStopped, FreezerRecordOfAnotherShapeIsRefused) {
  EXPECT_TRUE(checkLimitsCgroupPath(kGood).ok());
  EXPECT_TRUE(checkLimitsCgroupPath("/corral-0123456789abcdef").ok());
  EXPECT_TRUE(checkLimitsCgroupPath("/user.slice/user@1000.service/corral-0123456789abcdef").ok());
  for (const char* hostile : {"", "corral/corral-0123456789abcdef", "/corral/../corral-0123456789abcdef",
                              "/corral-0123456789abcdef/..", "/corral/./corral-0123456789abcdef", "//corral-0123456789abcdef",
                              "/corral/corral-0123456789abcdef/", "/corral/corral-0123456789ABCDEF", "/corral/corral-0123456789abcde",
                              "/corral/corral-0123456789abcdef0", "/corral-sessions/0123456789abcdef", "/corral-sessions",
                              "/system.slice/corral-daemon.service", "/", "/corral/corral-0123456789abcdef\n/x",
                              "/corral dir/corral-0123456789abcdef"})
    EXPECT_FALSE(checkLimitsCgroupPath(hostile).ok()) << "daemon.paused-session-stopped: a record of '" << hostile << "' was taken";
  EXPECT_FALSE(checkLimitsCgroupPath(std::string("/corral\0/corral-0123456789abcdef", 31)).ok());
  EXPECT_FALSE(checkLimitsCgroupPath("/" + std::string(5000, 'a') + "/corral-0123456789abcdef").ok());
}

TEST(DaemonPausedSessionStopped, FreezerRecordRoundTripsAndRefusesWhatIsNotOneLine) {
  TempDir dir;
  auto none = readFreezerRecord(dir.path);
  ASSERT_TRUE(none.ok()) << none.error().message();
  EXPECT_FALSE(none->has_value()) << "no record yet";
  ASSERT_TRUE(writeFreezerRecord(dir.path, kGood).ok());
  auto back = readFreezerRecord(dir.path);
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ(**back, kGood);
  EXPECT_FALSE(writeFreezerRecord(dir.path, "/corral/../x").ok()) << "a bad shape is never written";
  eraseFreezerRecord(dir.path);
  EXPECT_FALSE(readFreezerRecord(dir.path)->has_value());
  // Not one line, a symlink, a directory: refused (a read never follows a link).
  const std::string rec = dir.path + "/freezer-cgroup";
  std::ofstream(rec) << kGood;  // no newline: cut short
  EXPECT_FALSE(readFreezerRecord(dir.path).ok());
  ::unlink(rec.c_str());
  std::ofstream(dir.path + "/target") << kGood << "\n";
  ASSERT_EQ(::symlink((dir.path + "/target").c_str(), rec.c_str()), 0);
  EXPECT_FALSE(readFreezerRecord(dir.path).ok()) << "a symlinked record was followed";
  ::unlink(rec.c_str());
  ASSERT_EQ(::mkdir(rec.c_str(), 0700), 0);
  EXPECT_FALSE(readFreezerRecord(dir.path).ok());
}

TEST(DaemonPausedSessionStopped, FreezerRecordOffACgroup2HierarchyIsRefused) {
  // A directory of the right name on another file system (here under /tmp) is no cgroup.
  TempDir dir;
  ASSERT_EQ(::mkdir((dir.path + "/corral-0123456789abcdef").c_str(), 0700), 0);
  std::ofstream(dir.path + "/corral-0123456789abcdef/cgroup.freeze") << "0\n";
  auto opened = openLimitsCgroup(dir.path, "/corral-0123456789abcdef");
  EXPECT_FALSE(opened.ok()) << "daemon.paused-session-stopped: a directory off cgroup2 was taken for a limits cgroup";
  auto gone = openLimitsCgroup(dir.path, "/corral-fedcba9876543210");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code(), ENOENT) << "a gone cgroup reads as gone: " << gone.error().message();
}

}  // namespace
}  // namespace corral::daemon
