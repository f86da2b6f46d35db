// SPDX-License-Identifier: Apache-2.0
// --timing output.
#include "sandbox/launch_timing.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "sandbox/child.h"

namespace corral::sandbox::timing {

void Timing::print() const {
  std::string line = "corral: timing";
  for (size_t i = 1; i < marks_.size(); ++i) {
    double ms = std::chrono::duration<double, std::milli>(marks_[i].second - marks_[i - 1].second).count();
    char buf[96];
    std::snprintf(buf, sizeof(buf), " %s=%.3fms", marks_[i].first, ms);
    line += buf;
  }
  line += "\n";
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
}

uint64_t nowNs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void printMilestones(const uint64_t* m, uint64_t clone_ns, uint64_t reaped_ns) {
  static const char* kNames[] = {"maps_wait", "workspace_tmpfs", "mounts", "hostname_listener", "fork_cmd",
                                 "cmd_presetup", "cmd_run_and_reap", "report"};
  std::string line = "corral: timing child (us): clone->";
  uint64_t prev = clone_ns;
  for (size_t i = 0; i < child::kMilestones; ++i) {
    if (!m[i]) continue;
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%s=%llu ", kNames[i], static_cast<unsigned long long>((m[i] - prev) / 1000));
    line += buf;
    prev = m[i];
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "init_exit_and_teardown=%llu\n", static_cast<unsigned long long>((reaped_ns - prev) / 1000));
  line += buf;
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
}

void printStepTimes(const mountns::Plan& plan, const uint64_t* stamps) {
  std::string line = "corral: timing mount steps (us):";
  for (size_t i = 1; i < plan.steps.size(); ++i) {
    // The first step after the id maps starts when the workspace tmpfs is made (milestone),
    // not when the step before it ended: init waited for the maps in between.
    const uint64_t start =
        i == plan.before_maps ? stamps[plan.steps.size() + child::kMsTmpfs] : stamps[i - 1];
    if (!stamps[i] || !start) continue;
    char buf[128];
    std::snprintf(buf, sizeof(buf), " [%zu %s]=%llu", i, plan.steps[i].what,
                  static_cast<unsigned long long>((stamps[i] - start) / 1000));
    line += buf;
  }
  line += "\n";
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace corral::sandbox::timing
