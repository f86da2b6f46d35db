// SPDX-License-Identifier: Apache-2.0
// openDirStream: every entry is listed whatever kind of fd the directory came as (an O_PATH fd,
// as fsmount() returns for the sandbox's /workspace, used to list as empty), and the fd given
// is left where it was.
#include "base/dir_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "base/unique_fd.h"

namespace corral {
namespace {

struct Scratch {
  std::string path;
  Scratch() {
    char t[] = "/tmp/corral-dir-stream-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~Scratch() { std::system(("rm -rf '" + path + "'").c_str()); }
};

std::set<std::string> names(int dir, int* err) {
  std::set<std::string> out;
  DirStream d = openDirStream(dir);
  if (!d) {
    *err = errno;
    return out;
  }
  errno = 0;
  while (dirent* e = ::readdir(d.get())) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") out.insert(n);
    errno = 0;
  }
  *err = errno;
  return out;
}

TEST(DirStream, ListsEveryEntryThroughAnOPathFdAndAnOrdinaryOne) {
  Scratch s;
  for (const char* n : {"a", "b", "c"}) UniqueFd(::open((s.path + "/" + n).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  ASSERT_EQ(::mkdir((s.path + "/sub").c_str(), 0700), 0);
  const std::set<std::string> want = {"a", "b", "c", "sub"};
  for (int flags : {O_PATH | O_DIRECTORY | O_CLOEXEC, O_RDONLY | O_DIRECTORY | O_CLOEXEC}) {
    SCOPED_TRACE(flags & O_PATH ? "O_PATH" : "O_RDONLY");
    UniqueFd dir(::open(s.path.c_str(), flags));
    ASSERT_TRUE(dir.valid());
    int err = -1;
    EXPECT_EQ(names(dir.get(), &err), want);
    EXPECT_EQ(err, 0);
    EXPECT_EQ(names(dir.get(), &err), want) << "a second walk must start from the beginning again";
  }
}

// Control: a file is not a directory, whatever the fd.
TEST(DirStream, ControlAFileIsRefused) {
  Scratch s;
  const std::string f = s.path + "/f";
  UniqueFd(::open(f.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  for (int flags : {O_PATH | O_CLOEXEC, O_RDONLY | O_CLOEXEC}) {
    UniqueFd fd(::open(f.c_str(), flags));
    ASSERT_TRUE(fd.valid());
    EXPECT_FALSE(openDirStream(fd.get()));
    EXPECT_EQ(errno, ENOTDIR);
  }
}

}  // namespace
}  // namespace corral
