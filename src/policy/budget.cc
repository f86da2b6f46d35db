// SPDX-License-Identifier: Apache-2.0
#include "policy/budget.h"

#include <algorithm>

namespace corral::policy {

const char* budgetName(BudgetKind kind) {
  switch (kind) {
    case BudgetKind::kTurns: return "max_turns";
    case BudgetKind::kModelCalls: return "max_model_calls";
    case BudgetKind::kWallTime: return "wall_time";
    case BudgetKind::kLoops: return "max_loops";
    case BudgetKind::kPendingTasks: return "max_pending_tasks";
  }
  return "unknown";
}

std::string BudgetExceeded::message() const {
  if (kind == BudgetKind::kWallTime)
    return "budget wall_time exhausted (" + std::to_string(used) + " ms of " + std::to_string(limit) + " ms)";
  return std::string("budget ") + budgetName(kind) + " exhausted (" + std::to_string(used) + " of " +
         std::to_string(limit) + " used)";
}

namespace {

std::optional<BudgetExceeded> wallCheck(Millis limit, Millis start, Millis now) {
  const Millis used = now - start;
  if (used >= limit)
    return BudgetExceeded{BudgetKind::kWallTime, static_cast<uint64_t>(limit.count()),
                          static_cast<uint64_t>(std::max<int64_t>(used.count(), 0))};
  return std::nullopt;
}

}  // namespace

std::optional<BudgetExceeded> RunBudget::takeModelCall() {
  if (model_calls_ >= limits_.max_model_calls)
    return BudgetExceeded{BudgetKind::kModelCalls, limits_.max_model_calls, model_calls_};
  ++model_calls_;
  return std::nullopt;
}

std::optional<BudgetExceeded> RunBudget::checkWallTime(Millis now) const {
  return wallCheck(limits_.wall_time, start_, now);
}

std::optional<BudgetExceeded> RunBudget::startLoop() {
  if (loops_ >= limits_.max_loops) return BudgetExceeded{BudgetKind::kLoops, limits_.max_loops, loops_};
  ++loops_;
  return std::nullopt;
}

std::optional<BudgetExceeded> RunBudget::enqueueTask() {
  if (auto over = canEnqueue()) return over;
  ++pending_;
  return std::nullopt;
}

std::optional<BudgetExceeded> RunBudget::canEnqueue() const {
  if (pending_ >= limits_.max_pending_tasks)
    return BudgetExceeded{BudgetKind::kPendingTasks, limits_.max_pending_tasks, pending_};
  // A queued task will need a loop: refuse now rather than queue work that can never start.
  if (loops_ + pending_ >= limits_.max_loops) return BudgetExceeded{BudgetKind::kLoops, limits_.max_loops, loops_ + pending_};
  return std::nullopt;
}

void RunBudget::dequeueTask() {
  if (pending_ > 0) --pending_;
}

Millis RunBudget::wallLeft(Millis now) const {
  const Millis left = limits_.wall_time - (now - start_);
  return std::max(left, Millis{0});
}

Remaining RunBudget::remaining(Millis now) const {
  Remaining r;
  r.model_calls = limits_.max_model_calls - std::min(model_calls_, limits_.max_model_calls);
  r.wall_time = wallLeft(now);
  r.pending_tasks = limits_.max_pending_tasks - std::min(pending_, limits_.max_pending_tasks);
  const uint32_t committed = loops_ + pending_;
  r.loops = limits_.max_loops - std::min(committed, limits_.max_loops);
  return r;
}

std::optional<BudgetExceeded> TaskBudget::takeTurn() {
  if (turns_ >= limits_.max_turns) return BudgetExceeded{BudgetKind::kTurns, limits_.max_turns, turns_};
  ++turns_;
  return std::nullopt;
}

std::optional<BudgetExceeded> TaskBudget::takeModelCall(Millis now) {
  if (auto e = checkWallTime(now)) return e;
  if (model_calls_ >= limits_.max_model_calls)
    return BudgetExceeded{BudgetKind::kModelCalls, limits_.max_model_calls, model_calls_};
  if (auto e = run_.takeModelCall()) return e;
  ++model_calls_;
  return std::nullopt;
}

std::optional<BudgetExceeded> TaskBudget::checkWallTime(Millis now) const {
  if (auto e = wallCheck(limits_.wall_time, start_, now)) return e;
  return run_.checkWallTime(now);
}

Millis TaskBudget::commandTimeout(Millis now) const {
  const Millis own = std::max(limits_.wall_time - (now - start_), Millis{0});
  return std::min({limits_.command_timeout, own, run_.wallLeft(now)});
}

}  // namespace corral::policy
