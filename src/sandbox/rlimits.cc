// SPDX-License-Identifier: Apache-2.0
// setrlimit in the child (no allocation).
#include "sandbox/rlimits.h"

#include <errno.h>

namespace corral::sandbox::rlimits {

int apply(const Plan& plan) {
  for (size_t i = 0; i < plan.count; ++i) {
    const Entry& e = plan.entries[i];
    rlimit lim{e.value, e.value};
    if (e.resource == RLIMIT_CPU && e.value != RLIM_INFINITY) lim.rlim_max = e.value + 1;
    if (::setrlimit(e.resource, &lim) != 0) return errno;
  }
  return 0;
}

}  // namespace corral::sandbox::rlimits
