// SPDX-License-Identifier: Apache-2.0
// User namespace id maps.
#include "sandbox/userns.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <string_view>

#include "base/unique_fd.h"

namespace corral::sandbox::userns {
namespace {

Result<void> writeProcFile(int dir, const char* name, const std::string& content) {
  UniqueFd fd(::openat(dir, name, O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return sysError(std::string("open /proc/<child>/") + name);
  ssize_t n = ::write(fd.get(), content.data(), content.size());
  if (n != static_cast<ssize_t>(content.size())) return sysError(std::string("write /proc/<child>/") + name);
  return {};
}

}  // namespace

bool setgroupsDenied() {
  UniqueFd fd(::open("/proc/self/setgroups", O_RDONLY | O_CLOEXEC));
  char buf[8] = {};
  return fd.valid() && ::read(fd.get(), buf, sizeof(buf) - 1) >= 4 && std::string_view(buf).substr(0, 4) == "deny";
}

IdMapPlan planIdMap(uid_t caller_uid, gid_t caller_gid) {
  if (caller_uid == 0) return {kRootModeHostUid, kRootModeHostUid};
  return {caller_uid, caller_gid};
}

Result<void> writeIdMaps(int proc_pid_dir, const IdMapPlan& plan) {
  // setgroups must be denied before an unprivileged writer may write gid_map; we deny it
  // as root too, so a process inside can never drop a supplementary group to gain access.
  RETURN_IF_ERROR(writeProcFile(proc_pid_dir, "setgroups", "deny"));
  RETURN_IF_ERROR(writeProcFile(proc_pid_dir, "uid_map",
                                std::to_string(kSandboxUid) + " " + std::to_string(plan.host_uid) + " 1\n"));
  RETURN_IF_ERROR(writeProcFile(proc_pid_dir, "gid_map",
                                std::to_string(kSandboxGid) + " " + std::to_string(plan.host_gid) + " 1\n"));
  return {};
}

}  // namespace corral::sandbox::userns
