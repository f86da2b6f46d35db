// SPDX-License-Identifier: Apache-2.0
// workspace::stage into a plain directory: a tree big enough for the second copier thread
// arrives whole, directory modes land after their contents, and the first failure stops the
// copy with its own message. (make test-tsan runs this binary for the copier's threads.)
#include "sandbox/workspace.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/unique_fd.h"

namespace corral::sandbox::workspace {
namespace {

namespace fs = std::filesystem;

class TempTree {
 public:
  TempTree() {
    std::string tmpl = (fs::temp_directory_path() / "corral-stage-XXXXXX").string();
    root_ = ::mkdtemp(tmpl.data());
    fs::create_directory(src());
    fs::create_directory(dst());
  }
  ~TempTree() {
    std::error_code ec;
    for (auto& e : fs::recursive_directory_iterator(root_, ec))  // let removal into 0500 dirs
      if (e.is_directory(ec) && !e.is_symlink(ec)) fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(root_, ec);
  }
  fs::path src() const { return root_ / "src"; }
  fs::path dst() const { return root_ / "dst"; }
  void write(const std::string& rel, const std::string& data, mode_t mode = 0644) const {
    fs::create_directories((src() / rel).parent_path());
    std::ofstream(src() / rel, std::ios::binary) << data;
    ::chmod((src() / rel).c_str(), mode);
  }
  Result<StageStats> stageNow() const {
    auto host = openHostDir(src().string());
    if (!host) return host.error();
    UniqueFd d(::open(dst().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    return stage(host->get(), d.get(), {::getuid(), ::getgid(), false});
  }

 private:
  fs::path root_;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Every entry below root as "path -> kind:mode:content-or-target".
std::map<std::string, std::string> listing(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (auto& e : fs::recursive_directory_iterator(root)) {
    struct stat st;
    ::lstat(e.path().c_str(), &st);
    std::string rel = e.path().lexically_relative(root).string();  // not relative(): it follows links
    std::string mode = std::to_string(st.st_mode & 07777);
    if (S_ISLNK(st.st_mode)) out[rel] = "link:" + fs::read_symlink(e.path()).string();
    else if (S_ISDIR(st.st_mode)) out[rel] = "dir:" + mode;
    else if (S_ISREG(st.st_mode)) out[rel] = "file:" + mode + ":" + slurp(e.path());
    else out[rel] = "other";
  }
  return out;
}

TEST(WorkspaceStage, ABigTreeArrivesWhole) {
  TempTree t;
  uint64_t bytes = 0;
  for (int d = 0; d < 12; ++d)
    for (int f = 0; f < 45; ++f) {  // 540 files: many batches, so both copiers work
      std::string data = "d" + std::to_string(d) + "f" + std::to_string(f) + std::string(static_cast<size_t>(f * 37), 'x');
      bytes += data.size();
      t.write("a/d" + std::to_string(d) + (d % 3 ? "/deep/er" : "") + "/f" + std::to_string(f), data, f % 2 ? 0600 : 0755);
    }
  t.write("top", "top", 04755);
  bytes += 3;
  fs::create_symlink("../top", t.src() / "a" / "link");
  ASSERT_EQ(::mkfifo((t.src() / "fifo").c_str(), 0644), 0);
  auto stats = t.stageNow();
  ASSERT_TRUE(stats) << stats.error().message();
  EXPECT_EQ(stats->files, 541u);
  EXPECT_EQ(stats->bytes, bytes);
  EXPECT_EQ(stats->skipped, 1u);
  auto want = listing(t.src());
  want.erase("fifo");
  want["top"] = "file:" + std::to_string(0755) + ":top";  // setuid stripped
  const auto got = listing(t.dst());
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [rel, what] : want) {
    auto it = got.find(rel);
    ASSERT_NE(it, got.end()) << rel << " was not staged";
    EXPECT_EQ(it->second, what) << rel;
  }
}

// A directory the host keeps read-only still receives its files: its mode is set last.
TEST(WorkspaceStage, ReadOnlyDirectoriesGetTheirModeAfterTheirContents) {
  TempTree t;
  for (int f = 0; f < 70; ++f) t.write("ro/sub/f" + std::to_string(f), "x");
  ::chmod((t.src() / "ro" / "sub").c_str(), 0500);
  ::chmod((t.src() / "ro").c_str(), 0555);
  auto stats = t.stageNow();
  ASSERT_TRUE(stats) << stats.error().message();
  EXPECT_EQ(stats->files, 70u);
  struct stat st;
  ASSERT_EQ(::stat((t.dst() / "ro" / "sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0500u);
  ASSERT_EQ(::stat((t.dst() / "ro").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0555u);
}

// A file the copy cannot create (here: its name already taken) in the middle of a big tree
// ends the staging with that file's name, whichever copier met it.
TEST(WorkspaceStage, TheFirstFailureEndsTheCopyAndNamesTheFile) {
  TempTree t;
  for (int f = 0; f < 240; ++f) t.write("f" + std::to_string(f), "x");
  std::ofstream(t.dst() / "f177") << "already here";
  auto stats = t.stageNow();
  ASSERT_FALSE(stats);
  EXPECT_EQ(stats.error().message(), "--workspace: create f177: File exists");
}

TEST(WorkspaceStage, NestingPast128IsRefused) {
  TempTree t;
  std::string rel;
  for (int i = 0; i < 130; ++i) rel += "n/";
  t.write(rel + "f", "x");
  auto stats = t.stageNow();
  ASSERT_FALSE(stats);
  EXPECT_NE(stats.error().message().find("directories nest deeper than 128"), std::string::npos) << stats.error().message();
}

// Modes travel with the directory's descriptor, not its path: 20 levels of 250-byte names
// (deeper than PATH_MAX) keep theirs at every level.
TEST(WorkspaceStage, ModesHoldBelowPathMax) {
  TempTree t;
  const std::string name(250, 'L');
  fs::path p = t.src();
  int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY);
  for (int i = 0; i < 20; ++i) {  // by descriptor: the full path is too long for the test too
    ASSERT_EQ(::mkdirat(fd, name.c_str(), 0751), 0);
    int next = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY);
    ::close(fd);
    fd = next;
  }
  ::close(fd);
  auto stats = t.stageNow();
  ASSERT_TRUE(stats) << stats.error().message();
  fd = ::open(t.dst().c_str(), O_RDONLY | O_DIRECTORY);
  for (int i = 0; i < 20; ++i) {
    int next = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(next, 0) << "level " << i;
    ::close(fd);
    fd = next;
    struct stat st;
    ASSERT_EQ(::fstat(fd, &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0751u) << "level " << i;
  }
  ::close(fd);
}

// The caller's file-size limit (ulimit -f) makes staging fail with a message, not die of
// SIGXFSZ; the disposition is the caller's again afterwards.
TEST(WorkspaceStage, ACallersFileSizeLimitIsAnErrorNotADeath) {
  TempTree t;
  t.write("big", std::string(64 * 1024, 'x'));
  pid_t pid = ::fork();
  if (pid == 0) {
    rlimit small{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &small);
    auto stats = t.stageNow();
    struct sigaction now{};
    ::sigaction(SIGXFSZ, nullptr, &now);
    const bool restored = now.sa_handler == SIG_DFL;
    const bool named = !stats && stats.error().message().find("file too large") != std::string::npos;
    ::_exit(named && restored ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

// A workspace path that gained a symlink after it was resolved is refused, not followed.
TEST(WorkspaceStage, AHostPathWithASymlinkIsRefused) {
  TempTree t;
  t.write("f", "x");
  fs::create_directory_symlink(t.src(), t.src().parent_path() / "link");
  auto opened = openHostDir((t.src().parent_path() / "link").string());
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code(), ELOOP) << opened.error().message();
  EXPECT_TRUE(openHostDir(t.src().string())) << "control: the real path opens";
}

}  // namespace
}  // namespace corral::sandbox::workspace
