// SPDX-License-Identifier: Apache-2.0
// mirrorWorkspace: the private workspace becomes what the command left (files, directories,
// deletions, links as links), through the O_PATH fd the sandbox's /workspace arrives as; what
// cannot be listed or kept is never taken for a deletion.
#include "agent/workspace_mirror.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "base/unique_fd.h"

namespace corral::agent {
namespace {

namespace fs = std::filesystem;

struct Tree {
  std::string path;
  Tree() {
    char tmpl[] = "/tmp/corral-mirror-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~Tree() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& rel) const { return path + "/" + rel; }
  void write(const std::string& rel, const std::string& bytes) const {
    fs::create_directories(fs::path(*this / rel).parent_path());
    std::ofstream(*this / rel) << bytes;
  }
  std::string read(const std::string& rel) const {
    std::ifstream f(*this / rel);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  bool exists(const std::string& rel) const {
    struct stat st {};
    return ::lstat((*this / rel).c_str(), &st) == 0;
  }
  UniqueFd open(int flags) const { return UniqueFd(::open(path.c_str(), flags | O_DIRECTORY | O_CLOEXEC)); }
};

TEST(WorkspaceMirror, ThePrivateWorkspaceBecomesWhatTheCommandLeftThroughAnOPathFd) {
  Tree from, to;
  to.write("kept.txt", "old");
  to.write("deleted.txt", "x");
  to.write("was_dir/inner", "y");
  to.write(".corral/trace.jsonl", "mine");
  from.write("kept.txt", "new");
  from.write("build/obj.bin", "obj");
  from.write("was_dir", "now a file");
  from.write(".corral/trace.jsonl", "the command's");
  ASSERT_EQ(::symlink("kept.txt", (from / "link").c_str()), 0);
  ASSERT_EQ(::mkfifo((from / "fifo").c_str(), 0600), 0);

  UniqueFd f = from.open(O_PATH);  // as fsmount() gives the sandbox's /workspace
  UniqueFd t = to.open(O_RDONLY);
  ASSERT_TRUE(f.valid() && t.valid());
  const MirrorStats s = mirrorWorkspace(f.get(), t.get());
  EXPECT_EQ(to.read("kept.txt"), "new");
  EXPECT_EQ(to.read("build/obj.bin"), "obj");
  EXPECT_EQ(to.read("was_dir"), "now a file");
  EXPECT_FALSE(to.exists("deleted.txt"));
  EXPECT_EQ(fs::read_symlink(to / "link"), "kept.txt") << "a symlink is kept as a link";
  EXPECT_FALSE(to.exists("fifo")) << "a FIFO is never kept";
  EXPECT_EQ(to.read(".corral/trace.jsonl"), "mine") << "the top-level .corral is never touched";
  EXPECT_EQ(s.files, 3u);
  EXPECT_EQ(s.links, 1u);
  EXPECT_EQ(s.removed, 2u);  // deleted.txt, and was_dir replaced by a file
  EXPECT_EQ(s.skipped, 1u);
  EXPECT_EQ(s.first_skip, "fifo: fifo");
}

// An entry that cannot be looked at is not one the command removed: a directory the command
// made readable but not searchable (mode 0444) lists its names, but none can be stat'ed, and
// the first version took them all for deletions. Root would search it anyway, so as root the
// mirror runs in a child as uid 65534.
std::optional<MirrorStats> mirrorAsNobody(const Tree& from, const Tree& to) {  // nullopt: the child failed
  if (::geteuid() != 0) return mirrorWorkspace(from.open(O_PATH).get(), to.open(O_RDONLY).get());
  for (const Tree* t : {&from, &to}) {
    (void)::chown(t->path.c_str(), 65534, 65534);
    for (const auto& e : fs::recursive_directory_iterator(t->path)) (void)::lchown(e.path().c_str(), 65534, 65534);
  }
  int pipefd[2];
  if (::pipe(pipefd) != 0) return std::nullopt;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    const MirrorStats s = mirrorWorkspace(from.open(O_PATH).get(), to.open(O_RDONLY).get());
    const uint64_t counts[4] = {s.files, s.links, s.removed, s.skipped};
    ::_exit(::write(pipefd[1], counts, sizeof counts) == sizeof counts ? 0 : 3);
  }
  ::close(pipefd[1]);
  uint64_t counts[4] = {0, 0, 0, 0};
  const bool got = ::read(pipefd[0], counts, sizeof counts) == sizeof counts;
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  MirrorStats s;
  s.files = counts[0];
  s.links = counts[1];
  s.removed = counts[2];
  s.skipped = counts[3];
  return s;
}

TEST(WorkspaceMirror, EntriesThatCannotBeLookedAtAreKeptNotRemoved) {
  Tree from, to;
  from.write("sub/a", "a");
  from.write("sub/b", "b");
  to.write("sub/a", "old a");
  to.write("sub/b", "old b");
  to.write("keep.txt", "k");
  from.write("keep.txt", "k2");
  ASSERT_EQ(::chmod((from / "sub").c_str(), 0444), 0);
  const std::optional<MirrorStats> mirrored = mirrorAsNobody(from, to);
  ::chmod((from / "sub").c_str(), 0755);
  ASSERT_TRUE(mirrored.has_value()) << "the mirror's child (uid 65534) failed";
  const MirrorStats& s = *mirrored;
  EXPECT_EQ(to.read("sub/a"), "old a") << "an entry that could not be stat'ed was taken for a deletion";
  EXPECT_EQ(to.read("sub/b"), "old b");
  EXPECT_EQ(to.read("keep.txt"), "k2") << "control: the readable part is mirrored";
  EXPECT_EQ(s.removed, 0u);
  EXPECT_EQ(s.skipped, 2u);
}

}  // namespace
}  // namespace corral::agent
