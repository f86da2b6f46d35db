// SPDX-License-Identifier: Apache-2.0
// cgroup v1 specifics: memory limit (with memsw) and memory stats. pids is the same on v1 and v2.
#pragma once

#include <cstdint>

#include "base/result.h"
#include "sandbox/cgroup.h"

namespace corral::sandbox::cgroup::v1 {

// memory.limit_in_bytes, plus memory.memsw.limit_in_bytes at the same value when the kernel
// accounts swap (so swap is off for the sandbox); otherwise memory.swappiness=0. Also turns
// the OOM killer on. Returns whether swap is capped. dirfd: a fresh per-run memory cgroup.
Result<bool> writeMemoryLimit(int dirfd, uint64_t bytes);

// peak from memory.max_usage_in_bytes; oom from memory.oom_control "oom_kill" (4.13),
// else memory.failcnt.
void readMemoryStats(int dirfd, Stats& stats);

}  // namespace corral::sandbox::cgroup::v1
