// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the tool handlers (internal to src/agent/tool_*.cc).
#pragma once
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "agent/mailbox.h"
#include "agent/tools.h"

namespace corral::agent::tools {

// Strict argument access: unknown fields, missing required fields and wrong types are errors
// whose message names the field (kInvalidArgument).
Result<void> onlyFields(const nlohmann::json& args, std::initializer_list<std::string_view> allowed);
Result<std::string> stringArg(const nlohmann::json& args, std::string_view name, size_t max_bytes);

// What the model sees, as JSON text; never throws (invalid UTF-8 is replaced).
std::string modelText(const nlohmann::json& j);

// A string safe to put in the trace as given (short, printable), or "sha256:<hex>" of it.
std::string traceable(std::string_view s, size_t max = 256);

// The common part of every tool_call trace entry.
nlohmann::json traceBase(const TaskState& task, const ToolCall& call, std::string_view decision);

// A refusal: traced (decision "refuse", rule, reason) and returned to the model.
Result<ToolResult> refuse(RunContext& run, const TaskState& task, const ToolCall& call, std::string_view rule,
                          std::string reason, nlohmann::json trace_args = nlohmann::json::object());

using Handler = Result<ToolResult> (*)(RunContext&, TaskState&, const ToolCall&, const nlohmann::json&);
Result<ToolResult> read(RunContext&, TaskState&, const ToolCall&, const nlohmann::json&);
Result<ToolResult> write(RunContext&, TaskState&, const ToolCall&, const nlohmann::json&);
Result<ToolResult> run(RunContext&, TaskState&, const ToolCall&, const nlohmann::json&);
Result<ToolResult> mailboxSend(RunContext&, TaskState&, const ToolCall&, const nlohmann::json&);
Result<ToolResult> mailboxRead(RunContext&, TaskState&, const ToolCall&, const nlohmann::json&);
Result<ToolResult> spawn(RunContext&, TaskState&, const ToolCall&, const nlohmann::json&);
Result<ToolResult> finish(RunContext&, TaskState&, const ToolCall&, const nlohmann::json&);

}  // namespace corral::agent::tools
