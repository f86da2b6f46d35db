// SPDX-License-Identifier: Apache-2.0
// cgroup v1 specifics: memory limit (with memsw) and memory stats.
#include "sandbox/cgroup_v1.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace corral::sandbox::cgroup::v1 {

Result<bool> writeMemoryLimit(int dirfd, uint64_t bytes) {
  const std::string value = std::to_string(bytes);
  // Invariant: the kernel keeps memory.limit_in_bytes <= memory.memsw.limit_in_bytes and
  // fails a write that would break it (EINVAL). A fresh child starts with both unlimited and
  // we only lower them, so limit first, then memsw. (Raising would need memsw first.)
  RETURN_IF_ERROR(detail::writeAt(dirfd, "memory.limit_in_bytes", value));
  bool capped = false;
  if (::faccessat(dirfd, "memory.memsw.limit_in_bytes", F_OK, 0) == 0) {
    RETURN_IF_ERROR(detail::writeAt(dirfd, "memory.memsw.limit_in_bytes", value));
    capped = true;
  } else {
    // No swap accounting (swapaccount=0 or CONFIG_MEMCG_SWAP off). swappiness 0 stops memcg
    // reclaim from scanning anon pages, which is as close to "no swap" as v1 gets here.
    RETURN_IF_ERROR(detail::writeAt(dirfd, "memory.swappiness", "0"));
  }
  // v1 copies oom_kill_disable from the parent at mkdir; with it set, a sandbox at its limit
  // would sleep in the OOM path forever instead of being killed.
  RETURN_IF_ERROR(detail::writeAt(dirfd, "memory.oom_control", "0"));
  return capped;
}

void readMemoryStats(int dirfd, Stats& stats) {
  if (auto peak = detail::readAt(dirfd, "memory.max_usage_in_bytes"))
    stats.peak_memory_bytes = std::strtoull(peak->c_str(), nullptr, 10);
  std::optional<uint64_t> kills;
  if (auto oom = detail::readAt(dirfd, "memory.oom_control")) kills = detail::flatKeyed(*oom, "oom_kill");
  if (kills) {
    stats.oom_killed = *kills > 0;
  } else if (auto failcnt = detail::readAt(dirfd, "memory.failcnt")) {
    // Before 4.13 there is no kill counter: hitting the limit is the best signal we have
    // (it over-reports when reclaim succeeded after a hit).
    stats.oom_killed = std::strtoull(failcnt->c_str(), nullptr, 10) > 0;
  }
}

}  // namespace corral::sandbox::cgroup::v1
