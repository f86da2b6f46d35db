// SPDX-License-Identifier: Apache-2.0
#include "base/secure_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "base/unique_fd.h"

namespace corral {

std::string whoElseCouldRename(int dir) {
  UniqueFd cur(::fcntl(dir, F_DUPFD_CLOEXEC, 0));
  if (!cur.valid()) return "cannot duplicate the directory";
  for (int depth = 0; depth < 4096; ++depth) {
    struct stat st;
    if (::fstat(cur.get(), &st) != 0) return "cannot stat a directory above it";
    const bool owner_ok = st.st_uid == 0 || st.st_uid == ::geteuid();
    const bool writable_by_others = (st.st_mode & 022) != 0;
    if (!owner_ok || (writable_by_others && (st.st_mode & S_ISVTX) == 0)) {
      char mode[8];
      std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
      const std::string where = realPathOf(cur.get());
      return (where.empty() ? std::string("a directory above it") : where) + " (uid " + std::to_string(st.st_uid) +
             ", mode " + mode + ")";
    }
    UniqueFd up(::openat(cur.get(), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!up.valid()) return "cannot open a directory above it";
    struct stat ust;
    if (::fstat(up.get(), &ust) != 0) return "cannot stat a directory above it";
    if (ust.st_dev == st.st_dev && ust.st_ino == st.st_ino) return "";  // "/": its own parent
    cur = std::move(up);
  }
  return "too deep";
}

std::string realPathOf(int dir) {
  char buf[4096];
  const std::string link = "/proc/self/fd/" + std::to_string(dir);
  ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf) - 1);
  if (n <= 0 || buf[0] != '/') return "";
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace corral
