// SPDX-License-Identifier: Apache-2.0
#include "agent/agent_loop.h"

#include <algorithm>
#include <thread>

#include "agent/system_prompt.h"
#include "agent/tool_common.h"
#include "agent/tools.h"
#include "base/sha256.h"

namespace corral::agent {

using nlohmann::json;

namespace {

// The hash of what was sent: every message's role, content and calls, in order. Kept as a
// running stream (one update per message appended), so each call costs O(new messages),
// not O(conversation).
class ConversationHash {
 public:
  void add(const Message& m) {
    json j = {{"role", roleName(m.role)}, {"content", m.content}, {"tool_call_id", m.tool_call_id}};
    for (const ToolCall& c : m.tool_calls) j["calls"].push_back({{"id", c.id}, {"name", c.name}, {"args", c.arguments_json}});
    h_.update(tools::modelText(j));
    h_.update("\n");
  }
  void catchUp(const std::vector<Message>& messages) {
    for (; seen_ < messages.size(); ++seen_) add(messages[seen_]);
  }
  std::string hex() const { return h_.peekHex(); }

 private:
  audit::Sha256Stream h_;
  size_t seen_ = 0;
};

struct CallResult {
  std::optional<ModelReply> reply;
  std::string status;  // when no reply: "budget_exhausted" or "model_error"
  std::string reason;
};

Result<CallResult> callModel(RunContext& run, TaskState& task, Provider& provider, const std::vector<Message>& messages,
                             const std::vector<ToolSpec>& specs, const LoopOptions& options, ConversationHash& hash) {
  hash.catchUp(messages);
  const std::string request_sha256 = hash.hex();
  for (uint32_t attempt = 0;; ++attempt) {
    if (auto over = task.budget->takeModelCall(run.now())) {
      RETURN_IF_ERROR(run.record("budget_exhausted", {{"task", task.id}, {"budget", policy::budgetName(over->kind)},
                                                      {"limit", over->limit}, {"used", over->used}}));
      return CallResult{std::nullopt, "budget_exhausted", over->message()};
    }
    RETURN_IF_ERROR(run.trace->sync());  // the steps so far are durable before the request leaves
    auto reply = provider.complete(messages, specs);
    json entry = {{"task", task.id}, {"turn", task.turn}, {"attempt", attempt}, {"provider", provider.name()},
                  {"request_sha256", request_sha256}, {"request_messages", messages.size()}};
    if (reply.ok()) {
      // Saturating: the totals go into the trace and result.json, whose integers stop at 2^53-1.
      constexpr uint64_t kMaxTotal = (uint64_t{1} << 53) - 1;
      run.counters.input_tokens = std::min(kMaxTotal, run.counters.input_tokens + reply->usage.input_tokens);
      run.counters.output_tokens = std::min(kMaxTotal, run.counters.output_tokens + reply->usage.output_tokens);
      entry.update({{"status", "ok"},
                    {"input_tokens", reply->usage.input_tokens},
                    {"output_tokens", reply->usage.output_tokens},
                    {"response_bytes", reply->response_bytes},
                    {"response_sha256", reply->response_sha256},
                    {"content_bytes", reply->content.size()},
                    {"content_sha256", audit::sha256Hex(reply->content)},
                    {"tool_calls", reply->tool_calls.size()},
                    {"stop_reason", tools::traceable(reply->stop_reason, 64)}});
      RETURN_IF_ERROR(run.keep(reply->content));
      RETURN_IF_ERROR(run.record("model_call", entry));
      return CallResult{std::move(*reply), "", ""};
    }
    const bool retry = isRetryable(reply.error()) && attempt < options.max_retries;
    entry.update({{"status", "error"}, {"error", tools::traceable(reply.error().message(), 512)}, {"retry", retry}});
    RETURN_IF_ERROR(run.record("model_call", entry));
    if (!retry) return CallResult{std::nullopt, "model_error", reply.error().message()};
    auto delay = std::min(options.backoff * (1 << std::min(attempt, 4u)), std::chrono::milliseconds(4000));
    delay = std::min(delay, task.budget->commandTimeout(run.now()));
    if (options.sleep) options.sleep(delay);
    else std::this_thread::sleep_for(delay);
  }
}

}  // namespace

Result<TaskOutcome> runTaskLoop(RunContext& run, const std::string& id, const policy::Manifest& manifest,
                                Provider& provider, const LoopOptions& options) {
  policy::TaskBudget budget(manifest.budgets, run.now(), *run.budget);
  TaskState task;
  task.id = id;
  task.manifest = &manifest;
  task.budget = &budget;
  TaskOutcome outcome;
  outcome.id = id;
  const std::string system_prompt = systemPrompt(manifest, run.apply, id);
  RETURN_IF_ERROR(run.record("task_start", {{"task", id},
                                            {"manifest_sha256", audit::sha256Hex(policy::manifestToCanonicalJson(manifest))},
                                            {"task_bytes", manifest.task.size()},
                                            {"task_sha256", audit::sha256Hex(manifest.task)},
                                            {"system_prompt_sha256", audit::sha256Hex(system_prompt)}}));
  std::vector<Message> messages;
  messages.push_back({Role::kSystem, system_prompt, {}, {}, {}});
  RETURN_IF_ERROR(run.keep(manifest.task));
  RETURN_IF_ERROR(run.keep(system_prompt));
  messages.push_back({Role::kUser, manifest.task, {}, {}, {}});
  const std::vector<ToolSpec> specs = toolSpecs();
  ConversationHash conversation_hash;

  while (!task.finished) {
    if (auto over = budget.checkWallTime(run.now()); over || (over = budget.takeTurn())) {
      RETURN_IF_ERROR(run.record("budget_exhausted", {{"task", id}, {"budget", policy::budgetName(over->kind)},
                                                      {"limit", over->limit}, {"used", over->used}}));
      outcome.status = "budget_exhausted";
      outcome.reason = over->message();
      break;
    }
    task.turn = budget.turns();
    ASSIGN_OR_RETURN(CallResult call, callModel(run, task, provider, messages, specs, options, conversation_hash));
    if (!call.reply) {
      outcome.status = call.status;
      outcome.reason = call.reason;
      break;
    }
    ModelReply& reply = *call.reply;
    if (reply.tool_calls.size() > kMaxToolCallsPerReply) {
      // One entry for the excess, not one per call: a reply of 200k calls must cost no more
      // than one of 17. The conversation keeps only the calls that were handled, so the
      // next request answers every call it holds.
      const size_t dropped = reply.tool_calls.size() - kMaxToolCallsPerReply;
      reply.tool_calls.resize(kMaxToolCallsPerReply);
      RETURN_IF_ERROR(run.record("tool_calls_dropped", {{"task", id},
                                                        {"turn", task.turn},
                                                        {"dropped", dropped},
                                                        {"limit", kMaxToolCallsPerReply},
                                                        {"rule", "too-many-calls"}}));
      reply.content += "\n[corral: " + std::to_string(dropped) + " further tool calls dropped: at most " +
                       std::to_string(kMaxToolCallsPerReply) + " per reply]";
    }
    Message assistant{Role::kAssistant, reply.content, reply.tool_calls, {}, {}};
    messages.push_back(assistant);
    if (reply.tool_calls.empty()) {
      // A reply without tool calls does not end the task: only finish() does, or a budget.
      messages.push_back({Role::kUser, "Continue with tool calls; call finish when the task is done.", {}, {}, {}});
      continue;
    }
    for (const ToolCall& c : reply.tool_calls) {
      // The wall clock is checked between calls too: one reply's calls must not outlast it.
      const auto late = task.finished ? std::nullopt : budget.checkWallTime(run.now());
      Result<ToolResult> r = task.finished ? refuseToolCall(run, task, c, "after-finish", "the task already finished")
                             : late        ? refuseToolCall(run, task, c, "budget.wall_time", late->message())
                                           : handleToolCall(run, task, c);
      if (!r.ok()) return r.error();
      messages.push_back({Role::kTool, r->content, {}, c.id, c.name});
    }
  }
  if (task.finished) {
    outcome.status = "finished";
    outcome.summary = task.summary;
  }
  outcome.turns = budget.turns();
  outcome.model_calls = budget.modelCalls();
  RETURN_IF_ERROR(run.record("task_end", {{"task", id},
                                          {"status", outcome.status},
                                          {"reason", tools::traceable(outcome.reason, 512)},
                                          {"turns", outcome.turns},
                                          {"model_calls", outcome.model_calls},
                                          {"summary_bytes", outcome.summary.size()},
                                          {"summary_sha256", audit::sha256Hex(outcome.summary)}}));
  return outcome;
}

}  // namespace corral::agent
