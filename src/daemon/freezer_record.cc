// SPDX-License-Identifier: Apache-2.0
// The in-place freezer record: a one-line file naming a cgroup v2 limits cgroup, checked on
// every read as if hostile (a damaged or planted record must never freeze another cgroup).
#include "daemon/freezer_record.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>

#include "base/read_fd.h"
#include "base/unique_fd.h"
#include "daemon/credential_vault.h"

namespace corral::daemon {
namespace {

constexpr char kRecord[] = "freezer-cgroup";
constexpr size_t kMaxPath = 4096;  // PATH_MAX: a longer record is not a cgroup path
constexpr std::string_view kPrefix = "corral-";

}  // namespace

bool isLimitsCgroupName(std::string_view name) {
  if (name.size() != kPrefix.size() + 16 || name.substr(0, kPrefix.size()) != kPrefix) return false;
  for (char c : name.substr(kPrefix.size()))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

Result<void> checkLimitsCgroupPath(std::string_view path) {
  auto refuse = [](const char* why) { return Error(Errc::kRefused, std::string("freezer record: ") + why); };
  if (path.empty() || path.size() > kMaxPath || path[0] != '/') return refuse("not an absolute cgroup path");
  for (char c : path)
    if (c <= ' ' || c > '~') return refuse("a character a cgroup path of ours never has");
  std::string_view last;
  for (size_t at = 1; at <= path.size();) {
    const size_t end = std::min(path.find('/', at), path.size());
    const std::string_view part = path.substr(at, end - at);
    if (part.empty() || part == "." || part == "..") return refuse("an empty, '.' or '..' component");
    last = part;
    at = end + 1;
  }
  if (!isLimitsCgroupName(last)) return refuse("not a corral limits cgroup (corral-<16 hex>)");
  return {};
}

Result<std::string> openLimitsCgroup(const std::string& mount, const std::string& path) {
  RETURN_IF_ERROR(checkLimitsCgroupPath(path));
  if (mount.empty() || mount[0] != '/') return Error(Errc::kUnsupported, "freezer record: no cgroup v2 hierarchy is mounted");
  const std::string dir = mount + path;
  // No component can be a symlink on cgroupfs; O_NOFOLLOW and the fs check make sure the
  // last one is a cgroup2 directory and nothing planted there.
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return sysError("freezer record: open " + dir);
  struct statfs fs;
  if (::fstatfs(fd.get(), &fs) != 0) return sysError("freezer record: statfs " + dir);
  if (fs.f_type != CGROUP2_SUPER_MAGIC) return Error(Errc::kRefused, "freezer record: " + dir + " is not on a cgroup v2 hierarchy");
  if (::faccessat(fd.get(), "cgroup.freeze", F_OK, 0) != 0) return sysError("freezer record: " + dir + "/cgroup.freeze");
  return dir;
}

Result<void> writeFreezerRecord(const std::string& session_dir, const std::string& path) {
  RETURN_IF_ERROR(checkLimitsCgroupPath(path));
  UniqueFd dir(::open(session_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) return sysError("open " + session_dir);
  return writeFileAtomic(dir.get(), kRecord, path + "\n");
}

Result<std::optional<std::string>> readFreezerRecord(const std::string& session_dir) {
  UniqueFd dir(::open(session_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid() && errno == ENOENT) return std::optional<std::string>();
  if (!dir.valid()) return sysError("open " + session_dir);
  UniqueFd fd(::openat(dir.get(), kRecord, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid() && errno == ENOENT) return std::optional<std::string>();
  if (!fd.valid()) return sysError("freezer record: open");
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return sysError("freezer record: fstat");
  if (!S_ISREG(st.st_mode)) return Error(Errc::kRefused, "freezer record: not a regular file");
  ASSIGN_OR_RETURN(std::string text, readUpTo(fd.get(), kMaxPath + 1, "freezer record"));
  if (text.size() > kMaxPath + 1 || text.empty() || text.back() != '\n') return Error(Errc::kRefused, "freezer record: not one line");
  text.pop_back();
  return std::optional<std::string>(std::move(text));
}

void eraseFreezerRecord(const std::string& session_dir) { ::unlink((session_dir + "/" + kRecord).c_str()); }

}  // namespace corral::daemon
