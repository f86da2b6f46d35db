// SPDX-License-Identifier: Apache-2.0
// Names that must not collide between runs (a cgroup, a temp file), never secrets.
#pragma once

#include <sys/random.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace corral {

// 16 lowercase hex digits from getrandom; the pid when the kernel has no entropy to give yet.
inline std::string randomHex16() {
  uint64_t r = 0;
  if (::getrandom(&r, sizeof(r), 0) != static_cast<ssize_t>(sizeof(r))) r = static_cast<uint64_t>(::getpid());
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(r));
  return buf;
}

}  // namespace corral
