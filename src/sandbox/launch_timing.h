// SPDX-License-Identifier: Apache-2.0
// `corral exec --timing`: the parent's phase marks, the init's per-mount-step stamps and
// the child milestones, printed as one stderr line each. Diagnostics only.
#pragma once

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "sandbox/mountns.h"

namespace corral::sandbox::timing {

class Timing {
 public:
  void mark(const char* phase) { marks_.emplace_back(phase, std::chrono::steady_clock::now()); }
  void print() const;

 private:
  std::vector<std::pair<const char*, std::chrono::steady_clock::time_point>> marks_;
};

uint64_t nowNs();
// Milestones of the init and the command, as gaps from the previous one (us).
void printMilestones(const uint64_t* milestones, uint64_t clone_ns, uint64_t reaped_ns);
// Each mount step's duration (us), from the stamps the init wrote after each step.
void printStepTimes(const mountns::Plan& plan, const uint64_t* stamps);

}  // namespace corral::sandbox::timing
