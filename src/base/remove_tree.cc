// SPDX-License-Identifier: Apache-2.0
#include "base/remove_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/dir_stream.h"
#include "base/unique_fd.h"

namespace corral {
namespace {

constexpr int kMaxDepth = 256;

bool removeContentsAt(int dir, int depth) {
  if (depth > kMaxDepth) return false;
  // Names first, then removal: unlinking while readdir walks the same directory may skip
  // entries.
  std::vector<std::string> names;
  {
    DirStream d = openDirStream(dir);
    if (!d) return false;
    while (dirent* e = ::readdir(d.get())) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
  }
  bool ok = true;
  for (const std::string& n : names) {
    struct stat st;
    if (::fstatat(dir, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // already gone
    if (S_ISDIR(st.st_mode)) {
      UniqueFd sub(::openat(dir, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub.valid() || !removeContentsAt(sub.get(), depth + 1)) ok = false;
      if (::unlinkat(dir, n.c_str(), AT_REMOVEDIR) != 0) ok = false;
    } else if (::unlinkat(dir, n.c_str(), 0) != 0) {
      ok = false;
    }
  }
  return ok;
}

}  // namespace

bool removeContents(int dir) { return removeContentsAt(dir, 0); }

bool removeTreeAt(int parent, const char* name, int held) {
  struct stat want, now;
  if (::fstat(held, &want) != 0 || ::fstatat(parent, name, &now, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (!S_ISDIR(now.st_mode) || now.st_dev != want.st_dev || now.st_ino != want.st_ino) return false;
  const bool emptied = removeContents(held);
  return ::unlinkat(parent, name, AT_REMOVEDIR) == 0 && emptied;
}

}  // namespace corral
