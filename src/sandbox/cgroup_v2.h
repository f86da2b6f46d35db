// SPDX-License-Identifier: Apache-2.0
// cgroup v2 specifics: parent preparation, memory limit, memory stats, cgroup.kill.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "sandbox/cgroup.h"

namespace corral::sandbox::cgroup::v2 {

// Root layout (ControllerSite::make_parent): enables the controllers in the root's
// subtree_control, makes `parent` (<root>/corral) if missing and enables them there too.
Result<void> prepareParent(const std::string& parent, const std::vector<std::string>& controllers);

// memory.max, memory.swap.max=0 (when the file exists), memory.oom.group=1. Returns whether
// swap is capped.
Result<bool> writeMemoryLimit(int dirfd, uint64_t bytes);

// peak from memory.peak (5.19); oom from memory.events "oom_kill" / "oom_group_kill".
void readMemoryStats(int dirfd, Stats& stats);

// Writes cgroup.kill (5.14) and waits for cgroup.events "populated 0". False when the file
// is missing or the cgroup did not empty in time; the caller falls back to signalling pids.
bool killViaCgroupKill(int dirfd);

}  // namespace corral::sandbox::cgroup::v2
