// SPDX-License-Identifier: Apache-2.0
// removeTreeAt / removeContents: whole trees go, symlinks are removed and never entered, and
// a name swapped under the remover loses nothing.
#include "base/remove_tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "base/unique_fd.h"

namespace corral {
namespace {

struct Scratch {
  std::string path;
  Scratch() {
    char t[] = "/tmp/corral-remove-tree-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~Scratch() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string operator/(const std::string& rel) const { return path + "/" + rel; }
};

void writeFile(const std::string& p, const std::string& content) {
  std::FILE* f = std::fopen(p.c_str(), "w");
  ASSERT_NE(f, nullptr) << p;
  std::fputs(content.c_str(), f);
  std::fclose(f);
}

bool exists(const std::string& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0;
}

UniqueFd openDir(const std::string& p) { return UniqueFd(::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)); }

TEST(RemoveTree, RemovesADeepTreeButNeverWhatASymlinkInItPointsTo) {
  Scratch s;
  ASSERT_EQ(::mkdir((s / "outside").c_str(), 0755), 0);
  writeFile(s / "outside/keep.txt", "keep");
  std::string deep = s / "tree";
  ASSERT_EQ(::mkdir(deep.c_str(), 0755), 0);
  for (int i = 0; i < 20; ++i) {
    deep += "/d";
    ASSERT_EQ(::mkdir(deep.c_str(), 0700), 0);
    writeFile(deep + "/f", "x");
  }
  ASSERT_EQ(::symlink((s / "outside").c_str(), (s / "tree/link").c_str()), 0);
  ASSERT_EQ(::symlink((s / "outside/keep.txt").c_str(), (s / "tree/d/filelink").c_str()), 0);
  UniqueFd parent = openDir(s.path), tree = openDir(s / "tree");
  ASSERT_TRUE(removeTreeAt(parent.get(), "tree", tree.get()));
  EXPECT_FALSE(exists(s / "tree"));
  EXPECT_TRUE(exists(s / "outside/keep.txt")) << "removal followed a symlink";
}

TEST(RemoveTree, ANameSwappedBeforeRemovalLosesNothing) {
  Scratch s;
  ASSERT_EQ(::mkdir((s / "root").c_str(), 0700), 0);
  writeFile(s / "root/staged", "x");
  UniqueFd parent = openDir(s.path), held = openDir(s / "root");
  // Someone renames the root away and puts another directory under its name.
  ASSERT_EQ(::rename((s / "root").c_str(), (s / "moved").c_str()), 0);
  ASSERT_EQ(::mkdir((s / "root").c_str(), 0755), 0);
  writeFile(s / "root/important", "precious");
  EXPECT_FALSE(removeTreeAt(parent.get(), "root", held.get()));
  EXPECT_TRUE(exists(s / "root/important")) << "the directory swapped in was emptied";
  EXPECT_TRUE(exists(s / "moved/staged"));
  // Control: under its own name it goes.
  UniqueFd moved = openDir(s / "moved");
  EXPECT_TRUE(removeTreeAt(parent.get(), "moved", moved.get()));
  EXPECT_FALSE(exists(s / "moved"));
}

}  // namespace
}  // namespace corral
