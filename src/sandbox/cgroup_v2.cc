// SPDX-License-Identifier: Apache-2.0
// cgroup v2 specifics: parent preparation, memory limit, memory stats, cgroup.kill.
#include "sandbox/cgroup_v2.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace corral::sandbox::cgroup::v2 {
namespace {

constexpr auto kKillWait = std::chrono::seconds(5);

// "+memory +pids" for the controllers not yet in dir/cgroup.subtree_control, "" when none.
std::string missingControllers(const std::string& dir, const std::vector<std::string>& controllers) {
  auto enabled = detail::readAt(AT_FDCWD, (dir + "/cgroup.subtree_control").c_str());
  std::string missing;
  for (const std::string& c : controllers) {
    if (enabled && detail::hasWord(*enabled, c)) continue;
    if (!missing.empty()) missing += ' ';
    missing += "+" + c;
  }
  return missing;
}

Result<void> enable(const std::string& dir, const std::vector<std::string>& controllers) {
  std::string missing = missingControllers(dir, controllers);
  if (missing.empty()) return {};
  // Concurrent corrals may race here; enabling an enabled controller is a no-op, not an error.
  if (auto r = detail::writeAt(AT_FDCWD, (dir + "/cgroup.subtree_control").c_str(), missing); !r)
    return r.error().wrap("enable " + missing + " in " + dir);
  return {};
}

}  // namespace

Result<void> prepareParent(const std::string& parent, const std::vector<std::string>& controllers) {
  std::string root = parent.substr(0, parent.rfind('/'));
  // The root cgroup is exempt from the no-internal-process rule, so this works while the root
  // holds processes (ours included). On systemd hosts memory and pids are already on.
  RETURN_IF_ERROR(enable(root, controllers));
  if (::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) return sysError("mkdir " + parent);
  // <root>/corral never holds processes (only its corral-* children do), so enabling cannot
  // fail with EBUSY unless someone else put a process there.
  return enable(parent, controllers);
}

Result<bool> writeMemoryLimit(int dirfd, uint64_t bytes) {
  RETURN_IF_ERROR(detail::writeAt(dirfd, "memory.max", std::to_string(bytes)));
  bool capped = false;
  // memory.swap.max is absent without CONFIG_SWAP / with swapaccount=0 (before 6.1 the
  // latter also applied to v2); then swap cannot be capped per cgroup.
  if (::faccessat(dirfd, "memory.swap.max", F_OK, 0) == 0) {
    RETURN_IF_ERROR(detail::writeAt(dirfd, "memory.swap.max", "0"));
    capped = true;
  }
  // One OOM kill takes the whole sandbox (4.19), so no half-killed process tree survives.
  if (::faccessat(dirfd, "memory.oom.group", F_OK, 0) == 0)
    RETURN_IF_ERROR(detail::writeAt(dirfd, "memory.oom.group", "1"));
  return capped;
}

void readMemoryStats(int dirfd, Stats& stats) {
  if (auto peak = detail::readAt(dirfd, "memory.peak"))
    stats.peak_memory_bytes = std::strtoull(peak->c_str(), nullptr, 10);
  if (auto events = detail::readAt(dirfd, "memory.events")) {
    stats.oom_killed = detail::flatKeyed(*events, "oom_kill").value_or(0) > 0 ||
                       detail::flatKeyed(*events, "oom_group_kill").value_or(0) > 0;
  }
}

bool killViaCgroupKill(int dirfd) {
  if (::faccessat(dirfd, "cgroup.kill", F_OK, 0) != 0) return false;
  UniqueFd events(::openat(dirfd, "cgroup.events", O_RDONLY | O_CLOEXEC));
  if (!events.valid()) return false;
  // cgroup.kill also catches processes forking while it runs (CGRP_KILL is checked at fork).
  if (!detail::writeAt(dirfd, "cgroup.kill", "1").ok()) return false;
  const auto deadline = std::chrono::steady_clock::now() + kKillWait;
  for (;;) {
    // Reading through the polled fd re-arms it: kernfs wakes POLLPRI when the file changed
    // since this fd last read it, so a change between read and poll is not lost.
    char buf[256];
    if (::lseek(events.get(), 0, SEEK_SET) < 0) return false;
    ssize_t n = ::read(events.get(), buf, sizeof(buf) - 1);
    if (n < 0) return false;
    if (detail::flatKeyed(std::string_view(buf, static_cast<size_t>(n)), "populated") == 0) return true;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    struct pollfd pfd = {events.get(), POLLPRI, 0};
    ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
  }
}

}  // namespace corral::sandbox::cgroup::v2
