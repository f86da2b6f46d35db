// SPDX-License-Identifier: Apache-2.0
// Ollama native API: request building, reply and tag list parsing.
#include "agent/wire_ollama.h"

#include "agent/wire_json.h"
#include "agent/wire_openai.h"

namespace corral::agent::wire {
namespace {

using nlohmann::json;
constexpr std::string_view kWhat = "ollama";

// Ollama wants the arguments back as an object. They came from Ollama as one, so this only
// falls back to {} for a conversation built elsewhere with arguments that are not an object.
json argumentsObject(const std::string& arguments_json) {
  json parsed = json::parse(arguments_json, nullptr, /*allow_exceptions=*/false);
  return parsed.is_object() ? parsed : json::object();
}

// "library/llama3" has no tag; "host:5000/llama3" neither (the colon is in the host part).
bool hasTag(std::string_view model) {
  size_t slash = model.rfind('/');
  std::string_view last = slash == std::string_view::npos ? model : model.substr(slash + 1);
  return last.find(':') != std::string_view::npos;
}

}  // namespace

json ollamaRequest(std::string_view model, const std::vector<Message>& conversation,
                   const std::vector<ToolSpec>& tools, uint32_t max_tokens) {
  json messages = json::array();
  for (const Message& m : conversation) {
    json out = {{"role", roleName(m.role)}, {"content", m.content}};
    if (m.role == Role::kAssistant && !m.tool_calls.empty()) {
      json calls = json::array();
      for (const ToolCall& c : m.tool_calls)
        calls.push_back({{"function", {{"name", c.name}, {"arguments", argumentsObject(c.arguments_json)}}}});
      out["tool_calls"] = std::move(calls);
    }
    // Ollama matches a result to its call by tool name, having no ids.
    if (m.role == Role::kTool) out["tool_name"] = m.tool_name;
    messages.push_back(std::move(out));
  }
  json body = {{"model", model},
               {"messages", std::move(messages)},
               {"stream", false},
               {"options", {{"num_predict", max_tokens}}}};
  if (!tools.empty()) body["tools"] = functionTools(tools);
  return body;
}

Result<ModelReply> parseOllamaReply(std::string_view body, uint64_t first_call_number) {
  ASSIGN_OR_RETURN(json doc, parseJson(body, kWhat, /*strict=*/false));
  if (!doc.is_object()) return malformed(kWhat, "response is not an object");
  auto message = doc.find("message");
  if (message == doc.end() || !message->is_object()) return malformed(kWhat, "message missing");
  ModelReply reply;
  // Ollama leaves arguments out for tools without parameters.
  RETURN_IF_ERROR(parseAssistantMessage(*message, {"message", true}, kWhat, first_call_number, reply));
  if (auto reason = doc.find("done_reason"); reason != doc.end() && reason->is_string())
    reply.stop_reason = reason->get<std::string>();
  ASSIGN_OR_RETURN(reply.usage.input_tokens, optionalCount(doc, "prompt_eval_count", kWhat, "response"));
  ASSIGN_OR_RETURN(reply.usage.output_tokens, optionalCount(doc, "eval_count", kWhat, "response"));
  return reply;
}

Result<bool> ollamaTagsList(std::string_view body, std::string_view model) {
  constexpr std::string_view kTags = "ollama /api/tags";
  ASSIGN_OR_RETURN(json doc, parseJson(body, kTags, /*strict=*/false));
  if (!doc.is_object()) return malformed(kTags, "response is not an object");
  auto models = doc.find("models");
  if (models == doc.end() || !models->is_array()) return malformed(kTags, "models missing");
  const std::string latest = std::string(model) + ":latest";
  for (const json& m : *models) {
    if (!m.is_object()) return malformed(kTags, "models[] entry is not an object");
    auto name = m.find("name");
    if (name == m.end() || !name->is_string()) continue;
    const std::string& n = name->get_ref<const std::string&>();
    if (n == model || (!hasTag(model) && n == latest)) return true;
  }
  return false;
}

}  // namespace corral::agent::wire
