// SPDX-License-Identifier: Apache-2.0
// mailbox_send, mailbox_read, spawn and finish.
#include "agent/tool_common.h"
#include "base/sha256.h"

namespace corral::agent::tools {

using nlohmann::json;

Result<ToolResult> mailboxSend(RunContext& run, TaskState& task, const ToolCall& call, const json& args) {
  if (auto f = onlyFields(args, {"to", "body"}); !f.ok()) return refuse(run, task, call, "arguments", f.error().message());
  auto to = stringArg(args, "to", 64);
  if (!to.ok()) return refuse(run, task, call, "arguments", to.error().message());
  auto body = stringArg(args, "body", kMaxMailBodyBytes);
  if (!body.ok()) return refuse(run, task, call, "mailbox.size", body.error().message());
  const json targs = {{"to", traceable(*to, 64)}, {"bytes", body->size()}, {"sha256", audit::sha256Hex(*body)}};
  RETURN_IF_ERROR(run.keep(*body));
  if (*to != "operator") return refuse(run, task, call, "mailbox.to", "messages can only be sent to \"operator\"", targs);
  auto id = run.mailbox->send(task.id, *to, *body, run.now().count());
  if (!id.ok()) return refuse(run, task, call, "mailbox", id.error().message(), targs);
  json entry = traceBase(task, call, "allow");
  entry["args"] = targs;
  entry["message_id"] = *id;
  RETURN_IF_ERROR(run.record("tool_call", entry));
  return ToolResult{modelText({{"ok", true}, {"id", *id}}), false};
}

// cppcheck-suppress constParameter ; the signature is tools::Handler's (tool_common.h)
Result<ToolResult> mailboxRead(RunContext& run, TaskState& task, const ToolCall& call, const json& args) {
  if (auto f = onlyFields(args, {}); !f.ok()) return refuse(run, task, call, "arguments", f.error().message());
  auto messages = run.mailbox->receive();
  if (!messages.ok()) return refuse(run, task, call, "mailbox", messages.error().message());
  json entry = traceBase(task, call, "allow");
  json ids = json::array();
  json out = json::array();
  uint64_t bytes = 0;
  for (const MailMessage& m : *messages) {
    ids.push_back({{"id", traceable(m.id, 128)}, {"bytes", m.body.size()}, {"sha256", audit::sha256Hex(m.body)}});
    RETURN_IF_ERROR(run.keep(m.body));
    out.push_back({{"id", m.id}, {"body", m.body}});
    bytes += m.body.size();
  }
  entry["messages"] = ids;
  entry["bytes"] = bytes;
  RETURN_IF_ERROR(run.record("tool_call", entry));
  return ToolResult{modelText({{"ok", true}, {"messages", out}}), false};
}

Result<ToolResult> spawn(RunContext& run, TaskState& task, const ToolCall& call, const json& args) {
  if (auto f = onlyFields(args, {"task", "scope"}); !f.ok()) return refuse(run, task, call, "arguments", f.error().message());
  auto text = stringArg(args, "task", size_t{64} * 1024);
  if (!text.ok()) return refuse(run, task, call, "arguments", text.error().message());
  json scope = json::object();
  if (auto it = args.find("scope"); it != args.end()) {
    if (!it->is_object()) return refuse(run, task, call, "arguments", "argument 'scope' must be an object");
    scope = *it;
  }
  const std::string scope_text = modelText(scope);
  RETURN_IF_ERROR(run.keep(*text));
  json targs = {{"task_bytes", text->size()},
                {"task_sha256", audit::sha256Hex(*text)},
                {"scope_sha256", audit::sha256Hex(scope_text)}};
  // Budget first: a spawn the run has no room for is refused as such, whatever its scope.
  if (auto over = run.budget->canEnqueue())
    return refuse(run, task, call, std::string("budget.") + policy::budgetName(over->kind), over->message(), targs);
  auto child = policy::attenuate(*task.manifest, run.budget->remaining(run.now()), *text, scope_text);
  if (!child.ok()) return refuse(run, task, call, "spawn.scope", child.error().message(), targs);
  (void)run.budget->enqueueTask();
  const std::string id = "t" + std::to_string(run.next_task++);
  targs["child_manifest_sha256"] = audit::sha256Hex(policy::manifestToCanonicalJson(*child));
  run.queue.push_back({id, task.id, std::move(*child)});
  json entry = traceBase(task, call, "allow");
  entry["args"] = targs;
  entry["child"] = id;
  entry["pending"] = run.budget->pending();
  RETURN_IF_ERROR(run.record("tool_call", entry));
  return ToolResult{modelText({{"ok", true}, {"task_id", id}, {"note", "queued: it runs after the current task finishes"}}),
                    false};
}

Result<ToolResult> finish(RunContext& run, TaskState& task, const ToolCall& call, const json& args) {
  if (auto f = onlyFields(args, {"summary"}); !f.ok()) return refuse(run, task, call, "arguments", f.error().message());
  auto summary = stringArg(args, "summary", kMaxSummaryBytes);
  if (!summary.ok()) return refuse(run, task, call, "arguments", summary.error().message());
  json entry = traceBase(task, call, "allow");
  entry["args"] = {{"bytes", summary->size()}, {"sha256", audit::sha256Hex(*summary)}};
  RETURN_IF_ERROR(run.keep(*summary));
  RETURN_IF_ERROR(run.record("tool_call", entry));
  task.finished = true;
  task.summary = *summary;
  return ToolResult{modelText({{"ok", true}}), true};
}

}  // namespace corral::agent::tools
