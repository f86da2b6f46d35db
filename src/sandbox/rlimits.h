// SPDX-License-Identifier: Apache-2.0
// Resource limits applied with setrlimit in the command's process before exec.
#pragma once

#include <sys/resource.h>

#include <array>
#include <cstddef>

#include "base/result.h"

namespace corral::sandbox::rlimits {

struct Entry {
  int resource;
  rlim_t value;  // soft and hard
};

// A fixed-size plan computed before clone, so the child applies it without allocating.
struct Plan {
  std::array<Entry, 8> entries{};
  size_t count = 0;
  void add(int resource, rlim_t value) { entries[count++] = {resource, value}; }
};

// Parent side, before clone: the sandbox cannot raise a limit above the hard limit corral was
// started with (it has no CAP_SYS_RESOURCE in the host's user namespace, even when corral runs
// as root), so a plan asking for more is refused here on one line naming the option, instead of
// failing inside with "setrlimit: Operation not permitted".
Result<void> fitUnderHardLimits(const Plan& plan);

// Child side: applies every entry. RLIMIT_CPU gets hard = soft + 1 so SIGXCPU comes first
// and SIGKILL one second later. Returns 0 or errno.
int apply(const Plan& plan);

}  // namespace corral::sandbox::rlimits
