// SPDX-License-Identifier: Apache-2.0
// mirrorWorkspace: the sandbox's /workspace tmpfs made the run's private workspace again.
#include "agent/workspace_mirror.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "base/dir_stream.h"
#include "base/random_id.h"
#include "base/remove_tree.h"
#include "base/unique_fd.h"
#include "sandbox/file_copy.h"

namespace corral::agent {
namespace {

const char* kindOf(mode_t m) {
  if (S_ISFIFO(m)) return "fifo";
  if (S_ISSOCK(m)) return "socket";
  if (S_ISCHR(m) || S_ISBLK(m)) return "device";
  return "not a file, directory or symlink";
}

// prefix/name, or name at the top: the path shown for an entry.
std::string joined(const std::string& prefix, const std::string& name) {
  if (prefix.empty()) return name;
  std::string out = prefix;
  out += '/';
  out += name;
  return out;
}

class Mirror {
 public:
  MirrorStats stats;

  void dir(int from, int to, const std::string& prefix, int depth) {
    std::map<std::string, struct stat> want;  // what the command left, by name
    std::set<std::string> unknown;             // listed but not stat-able: kept as they were
    const std::string here = prefix.empty() ? "." : prefix;
    DirStream d = openDirStream(from);
    if (!d) return skip(here, std::string("cannot list: ") + std::strerror(errno));
    // A listing that ends in an error is not what the command left: nothing here is removed
    // or replaced on its account.
    errno = 0;
    while (dirent* e = ::readdir(d.get())) {
      const std::string name = e->d_name;
      if (name == "." || name == ".." || (depth == 0 && name == ".corral")) continue;
      struct stat st {};
      if (::fstatat(from, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        want.emplace(name, st);
      } else {
        unknown.insert(name);
        skip(joined(prefix, name), std::string("cannot stat: ") + std::strerror(errno));
      }
      errno = 0;
    }
    if (errno != 0) return skip(here, std::string("cannot list: ") + std::strerror(errno));
    // What the command removed, or replaced by another kind of entry, goes first.
    std::vector<std::string> gone;
    if (DirStream t = openDirStream(to)) {
      while (dirent* e = ::readdir(t.get())) {
        const std::string name = e->d_name;
        if (name == "." || name == ".." || (depth == 0 && name == ".corral")) continue;
        struct stat have {};
        if (::fstatat(to, name.c_str(), &have, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (unknown.count(name) != 0) continue;
        auto it = want.find(name);
        if (it == want.end() || (S_ISDIR(have.st_mode) && !S_ISDIR(it->second.st_mode))) gone.push_back(name);
      }
    }
    for (const std::string& name : gone) {
      if (remove(to, name)) ++stats.removed;
    }
    for (const auto& [name, st] : want) {
      const std::string rel = joined(prefix, name);
      if (S_ISDIR(st.st_mode)) {
        if (depth + 1 >= kMaxMirrorDepth) {
          skip(rel, "nested deeper than " + std::to_string(kMaxMirrorDepth) + " directories");
          continue;
        }
        struct stat have {};
        if (::fstatat(to, name.c_str(), &have, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(have.st_mode)) remove(to, name);
        if (::mkdirat(to, name.c_str(), 0700) != 0 && errno != EEXIST) {
          skip(rel, std::string("mkdir: ") + std::strerror(errno));
          continue;
        }
        UniqueFd f(::openat(from, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        UniqueFd t(::openat(to, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!f.valid() || !t.valid()) {
          skip(rel, std::string("open directory: ") + std::strerror(errno));
          continue;
        }
        (void)::fchmod(t.get(), (st.st_mode & 0777) | 0700);  // corral must be able to read it back
        dir(f.get(), t.get(), rel, depth + 1);
      } else if (S_ISREG(st.st_mode)) {
        file(from, to, name, rel, st);
      } else if (S_ISLNK(st.st_mode)) {
        link(from, to, name, rel);
      } else {
        remove(to, name);
        skip(rel, kindOf(st.st_mode));
      }
    }
  }

 private:
  void skip(const std::string& rel, const std::string& why) {
    if (stats.skipped++ == 0) stats.first_skip = rel + ": " + why;
  }

  // Removes to/name whatever it is: a directory through its fd, never through a symlink.
  bool remove(int to, const std::string& name) {
    if (::unlinkat(to, name.c_str(), 0) == 0) return true;
    UniqueFd held(::openat(to, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    return held.valid() && removeTreeAt(to, name.c_str(), held.get());
  }

  // A new inode under a temp name, renamed over the old entry: a hard link the private
  // workspace might hold is never written through.
  void file(int from, int to, const std::string& name, const std::string& rel, const struct stat& st) {
    UniqueFd src(::openat(from, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!src.valid()) return skip(rel, std::string("cannot open: ") + std::strerror(errno));
    const std::string tmp = ".corral-keep-" + randomHex16();
    UniqueFd dst(::openat(to, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (st.st_mode & 0755) | 0600));
    if (!dst.valid()) return skip(rel, std::string("create: ") + std::strerror(errno));
    auto copied = sandbox::copyFileData(src.get(), dst.get(), st, rel, sandbox::CopyInto::kHost);
    if (!copied.ok() || ::renameat(to, tmp.c_str(), to, name.c_str()) != 0) {
      const std::string why = copied.ok() ? std::string("rename: ") + std::strerror(errno) : copied.error().message();
      (void)::unlinkat(to, tmp.c_str(), 0);
      return skip(rel, why);
    }
    ++stats.files;
  }

  void link(int from, int to, const std::string& name, const std::string& rel) {
    char target[4096];
    const ssize_t n = ::readlinkat(from, name.c_str(), target, sizeof target);
    if (n < 0 || static_cast<size_t>(n) >= sizeof target) return skip(rel, "unreadable symlink");
    const std::string tmp = ".corral-keep-" + randomHex16();
    if (::symlinkat(std::string(target, static_cast<size_t>(n)).c_str(), to, tmp.c_str()) != 0 ||
        ::renameat(to, tmp.c_str(), to, name.c_str()) != 0) {
      const int err = errno;
      (void)::unlinkat(to, tmp.c_str(), 0);
      return skip(rel, std::string("symlink: ") + std::strerror(err));
    }
    ++stats.links;
  }
};

}  // namespace

MirrorStats mirrorWorkspace(int from, int to) {
  Mirror m;
  m.dir(from, to, "", 0);
  return m.stats;
}

}  // namespace corral::agent
