// SPDX-License-Identifier: Apache-2.0
// Resource limits applied with setrlimit in the command's process before exec.
#pragma once

#include <sys/resource.h>

#include <array>
#include <cstddef>

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

// Child side: applies every entry. RLIMIT_CPU gets hard = soft + 1 so SIGXCPU comes first
// and SIGKILL one second later. Returns 0 or errno.
int apply(const Plan& plan);

}  // namespace corral::sandbox::rlimits
