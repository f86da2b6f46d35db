// SPDX-License-Identifier: Apache-2.0
// setrlimit in the child (no allocation).
#include "sandbox/rlimits.h"

#include <errno.h>

#include <string>

namespace corral::sandbox::rlimits {
namespace {

struct Named {
  int resource;
  const char* option;
  const char* ulimit;
};
constexpr Named kNames[] = {{RLIMIT_NOFILE, "--open-files", "ulimit -Hn"}, {RLIMIT_NPROC, "--pids", "ulimit -Hu"},
                            {RLIMIT_FSIZE, "--file-size", "ulimit -Hf"},   {RLIMIT_CPU, "--cpu-time", "ulimit -Ht"},
                            {RLIMIT_AS, "--memory", "ulimit -Hv"}};

}  // namespace

Result<void> fitUnderHardLimits(const Plan& plan) {
  for (size_t i = 0; i < plan.count; ++i) {
    const Entry& e = plan.entries[i];
    // What apply() sets as the hard limit (RLIMIT_CPU: one second more).
    const rlim_t need = e.resource == RLIMIT_CPU && e.value != RLIM_INFINITY ? e.value + 1 : e.value;
    rlimit have{};
    if (::getrlimit(e.resource, &have) != 0 || have.rlim_max == RLIM_INFINITY || need <= have.rlim_max) continue;
    for (const Named& n : kNames) {
      if (n.resource != e.resource) continue;
      // The value asked for, or the default: name the most that would fit.
      std::string what = std::string(n.option) + " (given, or its default): needs " + std::to_string(need);
      rlim_t most = have.rlim_max;
      if (e.resource == RLIMIT_NPROC) what += " processes (one is corral's init)", most -= most > 0 ? 1 : 0;
      if (e.resource == RLIMIT_CPU) what += " s (one more than asked: SIGXCPU, then SIGKILL)", most -= most > 0 ? 1 : 0;
      if (e.resource == RLIMIT_FSIZE || e.resource == RLIMIT_AS) what += " bytes";
      return Error(Errc::kUnsupported, what + ", above the hard limit of " + std::to_string(have.rlim_max) +
                                           " corral runs under (" + n.ulimit + "), which the sandbox cannot raise; ask for at most " +
                                           std::to_string(most) + (e.resource == RLIMIT_CPU ? "s" : ""));
    }
    return Error(Errc::kUnsupported, "resource limit " + std::to_string(e.resource) + " is above corral's hard limit");
  }
  return {};
}

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
