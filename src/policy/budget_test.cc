// SPDX-License-Identifier: Apache-2.0
#include "policy/budget.h"

#include <gtest/gtest.h>

namespace corral::policy {
namespace {

using std::chrono::milliseconds;

Budgets small() {
  Budgets b;
  b.max_turns = 3;
  b.max_model_calls = 4;
  b.wall_time = milliseconds(1000);
  b.command_timeout = milliseconds(300);
  b.max_loops = 2;
  b.max_pending_tasks = 1;
  return b;
}

TEST(Budget, ModelCallsStopExactlyAtTheLimitAndCountNothingWhenRefused) {
  RunBudget run(small(), milliseconds(0));
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(run.takeModelCall());
  auto e = run.takeModelCall();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, BudgetKind::kModelCalls);
  EXPECT_EQ(run.modelCalls(), 4u);
  EXPECT_EQ(e->message(), "budget max_model_calls exhausted (4 of 4 used)");
}

TEST(Budget, TaskCallsAlsoDrawOnTheRunBudget) {
  RunBudget run(small(), milliseconds(0));
  Budgets child = small();
  child.max_model_calls = 10;  // a child claiming more than the run has still stops at the run's
  TaskBudget a(child, milliseconds(0), run);
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(a.takeModelCall(milliseconds(1)));
  auto e = a.takeModelCall(milliseconds(1));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, BudgetKind::kModelCalls);
  EXPECT_EQ(e->limit, 4u);
}

TEST(Budget, TurnsPerLoop) {
  RunBudget run(small(), milliseconds(0));
  TaskBudget t(small(), milliseconds(0), run);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(t.takeTurn());
  auto e = t.takeTurn();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, BudgetKind::kTurns);
}

TEST(Budget, WallTimeOfTaskAndRun) {
  RunBudget run(small(), milliseconds(0));
  Budgets child = small();
  child.wall_time = milliseconds(5000);
  TaskBudget t(child, milliseconds(500), run);
  EXPECT_FALSE(t.checkWallTime(milliseconds(999)));
  auto e = t.checkWallTime(milliseconds(1000));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, BudgetKind::kWallTime);
  EXPECT_TRUE(t.takeModelCall(milliseconds(1200)));
  EXPECT_EQ(run.modelCalls(), 0u);
}

TEST(Budget, CommandTimeoutNeverOutlivesTheWallTime) {
  RunBudget run(small(), milliseconds(0));
  TaskBudget t(small(), milliseconds(0), run);
  EXPECT_EQ(t.commandTimeout(milliseconds(0)), milliseconds(300));
  EXPECT_EQ(t.commandTimeout(milliseconds(900)), milliseconds(100));
  EXPECT_EQ(t.commandTimeout(milliseconds(2000)), milliseconds(0));
}

TEST(Budget, LoopsAndPendingTasksAreActivelyCapped) {
  RunBudget run(small(), milliseconds(0));
  EXPECT_FALSE(run.startLoop());           // the root: 1 of 2 loops
  EXPECT_FALSE(run.enqueueTask());         // 1 pending, committed 2 of 2
  auto e = run.enqueueTask();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, BudgetKind::kPendingTasks);
  run.dequeueTask();
  EXPECT_FALSE(run.startLoop());           // the subtask starts: 2 of 2
  auto f = run.startLoop();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, BudgetKind::kLoops);
  auto g = run.enqueueTask();              // no loop left for it: refused at spawn time
  ASSERT_TRUE(g);
  EXPECT_EQ(g->kind, BudgetKind::kLoops);
  EXPECT_EQ(run.remaining(milliseconds(10)).loops, 0u);
}

}  // namespace
}  // namespace corral::policy
