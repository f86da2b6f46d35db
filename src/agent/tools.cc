// SPDX-License-Identifier: Apache-2.0
// Tool schemas, argument decoding and dispatch; the handlers live in tool_*.cc.
#include "agent/tools.h"

#include "agent/tool_common.h"
#include "audit/canonical_json.h"
#include "base/sha256.h"
#include "policy/manifest_fields.h"

namespace corral::agent {
namespace tools {

using nlohmann::json;

Result<void> onlyFields(const json& args, std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : args.items()) {
    bool known = false;
    for (std::string_view a : allowed) known = known || key == a;
    if (!known) return Error(Errc::kInvalidArgument, "unknown argument '" + traceable(key, 64) + "'");
  }
  return {};
}

Result<std::string> stringArg(const json& args, std::string_view name, size_t max_bytes) {
  auto it = args.find(name);
  if (it == args.end()) return Error(Errc::kInvalidArgument, "missing argument '" + std::string(name) + "'");
  if (!it->is_string()) return Error(Errc::kInvalidArgument, "argument '" + std::string(name) + "' must be a string");
  const std::string& s = it->get_ref<const std::string&>();
  if (s.size() > max_bytes)
    return Error(Errc::kLimit, "argument '" + std::string(name) + "' is " + std::to_string(s.size()) +
                                   " bytes (limit " + std::to_string(max_bytes) + ")");
  return s;
}

std::string modelText(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string traceable(std::string_view s, size_t max) {
  bool plain = s.size() <= max;
  for (unsigned char c : s) plain = plain && c >= 0x20 && c < 0x7f;
  return plain ? std::string(s) : "sha256:" + audit::sha256Hex(s);
}

json boundedTraceList(const std::vector<std::string>& entries, size_t budget,
                      const std::function<json(const std::string&)>& item) {
  json out = json::array();
  size_t used = 0, i = 0;
  for (; i < entries.size(); ++i) {
    json one = item(entries[i]);
    const size_t size = one.dump(-1, ' ', false, json::error_handler_t::replace).size() + 1;
    if (used + size > budget) break;
    used += size;
    out.push_back(std::move(one));
  }
  if (i == entries.size()) return out;
  audit::Sha256Stream rest;
  uint64_t bytes = 0;
  for (size_t j = i; j < entries.size(); ++j) {
    rest.update(entries[j]);
    rest.update(std::string_view("\0", 1));
    bytes += entries[j].size();
  }
  out.push_back({{"more", entries.size() - i}, {"bytes", bytes}, {"sha256", rest.hexDigest()}});
  return out;
}

std::optional<std::string> canonicalArgumentsSha256(std::string_view arguments_json) {
  if (arguments_json.empty()) arguments_json = "{}";  // what handleToolCall reads it as
  auto parsed = policy::manifest_fields::parseStrict(arguments_json, kMaxToolArgumentsBytes, "arguments");
  if (!parsed.ok()) return std::nullopt;
  auto canonical = audit::canonicalJson(*parsed);
  if (!canonical.ok()) return std::nullopt;
  return sha256Hex(*canonical);
}

json traceBase(const TaskState& task, const ToolCall& call, std::string_view decision) {
  json out{{"task", task.id},
           {"turn", task.turn},
           {"call_id", traceable(call.id, 128)},
           {"tool", traceable(call.name, 64)},
           {"decision", decision},
           {"args_bytes", call.arguments_json.size()},
           {"args_sha256", sha256Hex(call.arguments_json)}};
  // The model's bytes hash differently once a provider or transcript re-serialises them; the
  // canonical form's hash matches a transcript's arguments however they were spelled.
  if (auto c = canonicalArgumentsSha256(call.arguments_json)) out["args_canonical_sha256"] = *c;
  return out;
}

Result<ToolResult> refuse(RunContext& run, const TaskState& task, const ToolCall& call, std::string_view rule,
                          std::string reason, json trace_args) {
  if (reason.size() > 512) reason.replace(509, std::string::npos, "...");
  ++run.counters.refusals;
  json entry = traceBase(task, call, "refuse");
  entry["rule"] = rule;
  entry["reason"] = traceable(reason, 512);
  entry["args"] = std::move(trace_args);
  RETURN_IF_ERROR(run.record("tool_call", entry));
  return ToolResult{modelText({{"ok", false}, {"refused", rule}, {"reason", reason}}), false};
}

}  // namespace tools

using nlohmann::json;

namespace {

json objectSchema(json properties, std::vector<std::string> required) {
  return {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)},
          {"additionalProperties", false}};
}

struct Entry {
  const char* name;
  tools::Handler handler;
};
constexpr Entry kHandlers[] = {
    {"read", tools::read},
    {"write", tools::write},
    {"run", tools::run},
    {"mailbox_send", tools::mailboxSend},
    {"mailbox_read", tools::mailboxRead},
    {"spawn", tools::spawn},
    {"finish", tools::finish},
};

}  // namespace

std::vector<ToolSpec> toolSpecs() {
  const json str = {{"type", "string"}};
  return {
      {"read", "Read a declared input or output file of the workspace (relative path).",
       objectSchema({{"path", str}}, {"path"})},
      {"write", "Replace the content of a declared output file (relative path).",
       objectSchema({{"path", str}, {"content", str}}, {"path", "content"})},
      {"run",
       "Run an allowlisted program in a fresh sandbox with the workspace as its current directory. "
       "command is the program's name; args is its argument list (no shell: no pipes, redirections or quoting).",
       objectSchema({{"command", str}, {"args", {{"type", "array"}, {"items", str}}}}, {"command", "args"})},
      {"mailbox_send", "Send a message to the operator.", objectSchema({{"to", str}, {"body", str}}, {"to", "body"})},
      {"mailbox_read", "Read new messages from the operator.", objectSchema(json::object(), {})},
      {"spawn",
       "Queue a subtask that runs after this task finishes, with at most this task's inputs, outputs, executables and "
       "remaining budget. scope may narrow inputs, outputs, executables and budgets.",
       objectSchema({{"task", str}, {"scope", {{"type", "object"}}}}, {"task"})},
      {"finish", "End this task with a short summary of what was done.", objectSchema({{"summary", str}}, {"summary"})},
  };
}

// A call refused before its handler (the task has finished, no wall time is left) is still a
// tool call: counted like one, and its arguments kept like one's (--trace-content full), so
// the counters agree with the trace's tool_call entries.
Result<ToolResult> refuseToolCall(RunContext& run, const TaskState& task, const ToolCall& call, std::string_view rule,
                                  std::string_view reason) {
  ++run.counters.tool_calls;
  RETURN_IF_ERROR(run.keep(call.arguments_json));
  return tools::refuse(run, task, call, rule, std::string(reason));
}

Result<ToolResult> handleToolCall(RunContext& run, TaskState& task, const ToolCall& call) {
  ++run.counters.tool_calls;
  RETURN_IF_ERROR(run.keep(call.arguments_json));
  tools::Handler handler = nullptr;
  for (const Entry& e : kHandlers)
    if (call.name == e.name) handler = e.handler;
  if (handler == nullptr)
    return tools::refuse(run, task, call, "unknown-tool", "no tool named '" + tools::traceable(call.name, 64) + "'");
  if (call.arguments_json.size() > kMaxToolArgumentsBytes)
    return tools::refuse(run, task, call, "arguments.size",
                         "arguments are " + std::to_string(call.arguments_json.size()) + " bytes (limit " +
                             std::to_string(kMaxToolArgumentsBytes) + ")");
  json args = json::object();
  if (!call.arguments_json.empty()) {
    // Strict: a duplicate key ({"path":"in/a","path":"secret"}) is refused, not resolved to
    // whichever one a JSON library keeps.
    auto parsed = policy::manifest_fields::parseStrict(call.arguments_json, kMaxToolArgumentsBytes, "arguments");
    if (!parsed.ok())
      return tools::refuse(run, task, call, "arguments.json",
                           "arguments are not strict JSON (malformed, a duplicate key or nested too deep)");
    args = std::move(*parsed);
  }
  if (!args.is_object()) return tools::refuse(run, task, call, "arguments.shape", "arguments must be a JSON object");
  return handler(run, task, call, args);
}

}  // namespace corral::agent
