// SPDX-License-Identifier: Apache-2.0
// Budget accounting for a run: pure counters checked by runner code before every model
// call, turn, loop and spawn. The limits come from the frozen manifest (and, for a subtask,
// its attenuated manifest); nothing a model returns reaches them. Time is passed in.
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "policy/manifest.h"

namespace corral::policy {

enum class BudgetKind { kTurns, kModelCalls, kWallTime, kLoops, kPendingTasks };
const char* budgetName(BudgetKind kind);  // the manifest's field name: "max_turns", ...

struct BudgetExceeded {
  BudgetKind kind;
  uint64_t limit = 0;
  uint64_t used = 0;
  std::string message() const;  // "budget max_model_calls exhausted (40 of 40 used)"
};

using Millis = std::chrono::milliseconds;

// The run's shared ceilings (the root manifest's): model calls, wall time, loops, pending tasks.
class RunBudget {
 public:
  RunBudget(const Budgets& limits, Millis now) : limits_(limits), start_(now) {}
  // Each take/start counts on success; on refusal nothing is counted.
  std::optional<BudgetExceeded> takeModelCall();
  std::optional<BudgetExceeded> checkWallTime(Millis now) const;
  std::optional<BudgetExceeded> startLoop();
  std::optional<BudgetExceeded> enqueueTask();
  std::optional<BudgetExceeded> canEnqueue() const;  // enqueueTask()'s check, counting nothing
  void dequeueTask();
  Remaining remaining(Millis now) const;
  Millis wallLeft(Millis now) const;

  uint32_t modelCalls() const { return model_calls_; }
  uint32_t loops() const { return loops_; }
  uint32_t pending() const { return pending_; }
  const Budgets& limits() const { return limits_; }

 private:
  Budgets limits_;
  Millis start_;
  uint32_t model_calls_ = 0;
  uint32_t loops_ = 0;
  uint32_t pending_ = 0;
};

// One agent loop's own ceilings (its manifest's budgets): turns, model calls, wall time.
// Every check also consults the run's shared budget.
class TaskBudget {
 public:
  TaskBudget(const Budgets& limits, Millis now, RunBudget& run) : limits_(limits), start_(now), run_(run) {}
  std::optional<BudgetExceeded> takeTurn();
  std::optional<BudgetExceeded> takeModelCall(Millis now);
  std::optional<BudgetExceeded> checkWallTime(Millis now) const;
  // What a command may use of the wall time: min(command_timeout, time left here and in the run).
  Millis commandTimeout(Millis now) const;
  uint32_t turns() const { return turns_; }
  uint32_t modelCalls() const { return model_calls_; }

 private:
  Budgets limits_;
  Millis start_;
  RunBudget& run_;
  uint32_t turns_ = 0;
  uint32_t model_calls_ = 0;
};

}  // namespace corral::policy
