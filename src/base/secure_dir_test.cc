// SPDX-License-Identifier: Apache-2.0
// whoElseCouldRename: a directory is safe to use by path only when nobody else can rename it
// or anything above it.
#include "base/secure_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "base/unique_fd.h"

namespace corral {
namespace {

struct Scratch {
  std::string path;
  Scratch() {
    char t[] = "/tmp/corral-secure-dir-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~Scratch() { std::system(("rm -rf '" + path + "'").c_str()); }
};

UniqueFd openDir(const std::string& p) { return UniqueFd(::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); }

TEST(WhoElseCouldRename, APrivateDirectoryUnderTmpIsSafe) {
  Scratch s;
  ASSERT_EQ(::chmod(s.path.c_str(), 0755), 0);
  UniqueFd d = openDir(s.path);
  EXPECT_EQ(whoElseCouldRename(d.get()), "");
  EXPECT_EQ(realPathOf(d.get()), s.path);
}

TEST(WhoElseCouldRename, AWorldWritableParentWithoutTheStickyBitIsNot) {
  Scratch s;
  ASSERT_EQ(::mkdir((s.path + "/inner").c_str(), 0700), 0);
  ASSERT_EQ(::chmod(s.path.c_str(), 0777), 0);
  UniqueFd inner = openDir(s.path + "/inner");
  const std::string why = whoElseCouldRename(inner.get());
  EXPECT_NE(why.find(s.path), std::string::npos) << why;
  EXPECT_NE(why.find("mode 0777"), std::string::npos) << why;
  // Control: the sticky bit (as on /tmp) makes the same parent safe.
  ASSERT_EQ(::chmod(s.path.c_str(), 01777), 0);
  EXPECT_EQ(whoElseCouldRename(inner.get()), "");
}

TEST(WhoElseCouldRename, ADirectoryOwnedByAnotherUserIsNot) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory away";
  Scratch s;
  ASSERT_EQ(::mkdir((s.path + "/inner").c_str(), 0700), 0);
  ASSERT_EQ(::chown(s.path.c_str(), 65533, 65533), 0);
  UniqueFd inner = openDir(s.path + "/inner");
  EXPECT_NE(whoElseCouldRename(inner.get()).find("uid 65533"), std::string::npos);
}

}  // namespace
}  // namespace corral
