// SPDX-License-Identifier: Apache-2.0
#include "base/secure_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <vector>

#include "base/unique_fd.h"

namespace corral {
namespace {

// The whitespace-separated unsigned numbers at the start of a small /proc file.
std::vector<unsigned long> numbersIn(const char* path) {
  std::vector<unsigned long> out;
  UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return out;
  char buf[256];
  const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
  if (n <= 0) return out;
  const char* p = buf;
  const char* end = buf + n;
  while (p < end) {
    while (p < end && (*p == ' ' || *p == '\t')) ++p;
    unsigned long v = 0;
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc() || next == p) break;
    out.push_back(v);
    p = next;
  }
  return out;
}

// Inside a user namespace (a container, `unshare --map-root-user`), a directory owned by a
// user the namespace does not map shows as the overflow uid: /tmp and / themselves, whose
// real owner is the host's root. Nobody inside can act as that user, so such an owner
// counts like root. In the initial namespace every uid is mapped and this never applies.
bool unmappedOwner(uid_t uid) {
  static const bool in_child_userns = [] {
    const std::vector<unsigned long> first = numbersIn("/proc/self/uid_map");  // "0 0 4294967295" in the initial one
    return !(first.size() >= 3 && first[0] == 0 && first[1] == 0 && first[2] == 4294967295UL);
  }();
  static const uid_t overflow = [] {
    const std::vector<unsigned long> v = numbersIn("/proc/sys/kernel/overflowuid");
    return static_cast<uid_t>(v.empty() ? 65534 : v[0]);
  }();
  return in_child_userns && uid == overflow;
}

}  // namespace

std::string whoElseCouldRename(int dir) {
  UniqueFd cur(::fcntl(dir, F_DUPFD_CLOEXEC, 0));
  if (!cur.valid()) return "cannot duplicate the directory";
  for (int depth = 0; depth < 4096; ++depth) {
    struct stat st;
    if (::fstat(cur.get(), &st) != 0) return "cannot stat a directory above it";
    const bool owner_ok = st.st_uid == 0 || st.st_uid == ::geteuid() || unmappedOwner(st.st_uid);
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
