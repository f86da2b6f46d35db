// SPDX-License-Identifier: Apache-2.0
// One agent loop: the conversation of one task (the root or a subtask) with the model,
// every reply's tool calls dispatched through tools.h, every ceiling checked before it is
// crossed. The loop never trusts the model to stop: turns, model calls and wall time end it.
#pragma once
#include <chrono>
#include <functional>
#include <string>

#include "agent/provider.h"
#include "agent/run_state.h"
#include "base/result.h"

namespace corral::agent {

struct LoopOptions {
  uint32_t max_retries = 2;                    // per model call; each attempt counts as a call
  std::chrono::milliseconds backoff{250};      // doubled per retry, capped at 4 s and by the wall time
  std::function<void(std::chrono::milliseconds)> sleep;  // empty: std::this_thread::sleep_for
};

// Runs task `id` with `manifest` (already attenuated for a subtask). An Error means the run
// must stop (the trace could not be written); how the task ended is in the TaskOutcome.
Result<TaskOutcome> runTaskLoop(RunContext& run, const std::string& id, const policy::Manifest& manifest,
                                Provider& provider, const LoopOptions& options);

}  // namespace corral::agent
