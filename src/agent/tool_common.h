// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the tool handlers (internal to src/agent/tool_*.cc).
#pragma once
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
// A trace list of model- or workspace-chosen length: `item` of each entry until the list holds
// `budget` bytes of JSON, then one last entry {"more": N, "bytes": B, "sha256": H} for the rest
// (H over the rest's raw strings, each followed by a NUL). A trace line has a size limit
// (audit::kMaxTraceLineBytes), and 256 arguments of 256 bytes each already outgrew it.
nlohmann::json boundedTraceList(const std::vector<std::string>& entries, size_t budget,
                                const std::function<nlohmann::json(const std::string&)>& item);
inline constexpr size_t kTraceListBudget = size_t{16} * 1024;

// SHA-256 of the canonical JSON (docs/audit-format.md §1) of a call's arguments, when they are
// strict JSON with a canonical form (no floats); empty arguments count as {}.
std::optional<std::string> canonicalArgumentsSha256(std::string_view arguments_json);

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
