// SPDX-License-Identifier: Apache-2.0
// The tools a model gets (read, write, run, mailbox_send, mailbox_read, spawn, finish):
// their JSON Schemas, and one entry point that validates a call, asks policy, executes
// (or, without --apply, validates only), traces the step and returns what the model sees.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/conversation.h"
#include "agent/run_state.h"
#include "base/result.h"

namespace corral::agent {

inline constexpr size_t kMaxToolArgumentsBytes = size_t{1} << 20;  // 1 MiB of JSON per call
inline constexpr size_t kMaxToolCallsPerReply = 16;
inline constexpr size_t kMaxSummaryBytes = size_t{16} * 1024;

std::vector<ToolSpec> toolSpecs();

struct ToolResult {
  std::string content;   // JSON text for the model
  bool finish = false;   // finish() was accepted: the loop ends
};

// Never throws. An Error means the run itself must stop (the trace could not be written);
// every refusal is a ToolResult the model sees and a traced entry.
Result<ToolResult> handleToolCall(RunContext& run, TaskState& task, const ToolCall& call);

// The refusal a model sees and the trace records, shared by the loop for calls it never
// dispatches (more than kMaxToolCallsPerReply in one reply).
Result<ToolResult> refuseToolCall(RunContext& run, const TaskState& task, const ToolCall& call, std::string_view rule,
                                  std::string_view reason);

}  // namespace corral::agent
