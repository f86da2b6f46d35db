// SPDX-License-Identifier: Apache-2.0
// OpenAI-compatible chat completions: request building and reply parsing.
#include "agent/wire_openai.h"

#include "agent/wire_json.h"

namespace corral::agent::wire {
namespace {

using nlohmann::json;
constexpr std::string_view kWhat = "openai";

json assistantMessage(const Message& m) {
  json out = {{"role", "assistant"}};
  if (m.tool_calls.empty()) {
    out["content"] = m.content;
    return out;
  }
  // With tool calls the API takes null for "no text"; an empty string is refused by some
  // compatible servers.
  out["content"] = m.content.empty() ? json(nullptr) : json(m.content);
  json calls = json::array();
  for (const ToolCall& c : m.tool_calls)
    calls.push_back({{"id", c.id},
                     {"type", "function"},
                     {"function", {{"name", c.name}, {"arguments", c.arguments_json}}}});
  out["tool_calls"] = std::move(calls);
  return out;
}

}  // namespace

json toolParameters(const ToolSpec& tool) {
  if (tool.parameters.is_object()) return tool.parameters;
  return {{"type", "object"}, {"properties", json::object()}};
}

json functionTools(const std::vector<ToolSpec>& tools) {
  json specs = json::array();
  for (const ToolSpec& t : tools)
    specs.push_back({{"type", "function"},
                     {"function", {{"name", t.name}, {"description", t.description}, {"parameters", toolParameters(t)}}}});
  return specs;
}

json openaiRequest(std::string_view model, const std::vector<Message>& conversation,
                   const std::vector<ToolSpec>& tools, uint32_t max_tokens) {
  json messages = json::array();
  for (const Message& m : conversation) {
    switch (m.role) {
      case Role::kSystem:
      case Role::kUser:
        messages.push_back({{"role", roleName(m.role)}, {"content", m.content}});
        break;
      case Role::kAssistant:
        messages.push_back(assistantMessage(m));
        break;
      case Role::kTool:
        messages.push_back({{"role", "tool"}, {"tool_call_id", m.tool_call_id}, {"content", m.content}});
        break;
    }
  }
  json body = {{"model", model}, {"messages", std::move(messages)}, {"max_tokens", max_tokens}};
  if (!tools.empty()) body["tools"] = functionTools(tools);
  return body;
}

Result<ModelReply> parseOpenaiReply(std::string_view body, uint64_t first_call_number) {
  ASSIGN_OR_RETURN(json doc, parseJson(body, kWhat, /*strict=*/false));
  if (!doc.is_object()) return malformed(kWhat, "response is not an object");
  auto choices = doc.find("choices");
  if (choices == doc.end() || !choices->is_array() || choices->empty())
    return malformed(kWhat, "choices missing or empty");
  const json& choice = (*choices)[0];
  if (!choice.is_object()) return malformed(kWhat, "choices[0] is not an object");
  auto message = choice.find("message");
  if (message == choice.end() || !message->is_object()) return malformed(kWhat, "choices[0].message missing");

  ModelReply reply;
  RETURN_IF_ERROR(parseAssistantMessage(*message, {"choices[0].message", false}, kWhat, first_call_number, reply));
  if (auto finish = choice.find("finish_reason"); finish != choice.end() && finish->is_string())
    reply.stop_reason = finish->get<std::string>();
  if (auto usage = doc.find("usage"); usage != doc.end() && !usage->is_null()) {
    if (!usage->is_object()) return malformed(kWhat, "usage is not an object");
    ASSIGN_OR_RETURN(reply.usage.input_tokens, optionalCount(*usage, "prompt_tokens", kWhat, "usage"));
    ASSIGN_OR_RETURN(reply.usage.output_tokens, optionalCount(*usage, "completion_tokens", kWhat, "usage"));
  }
  return reply;
}

}  // namespace corral::agent::wire
