// SPDX-License-Identifier: Apache-2.0
// Which host mechanism enforces each limit. Decided from the host's facilities before
// anything is created; a requested limit that nothing can enforce is an error unless the
// user accepted a weaker mechanism by name (--allow-weaker LIMIT).
#pragma once

#include <vector>

#include "base/result.h"
#include "sandbox/cgroup.h"
#include "sandbox/rlimits.h"
#include "sandbox/spec.h"

namespace corral::sandbox {

struct LimitDecision {
  std::vector<LimitUse> uses;  // one per Limit, for the report
  rlimits::Plan rlimits;       // applied in the command before exec
  cgroup::CgroupPlan cgroup;   // applied when need_cgroup
  bool need_cgroup = false;
};

Result<LimitDecision> planLimits(const Limits& limits, const cgroup::HostCgroups& host);

}  // namespace corral::sandbox
