// SPDX-License-Identifier: Apache-2.0
// Anthropic Messages API: request building and reply parsing.
#include "agent/wire_anthropic.h"

#include "agent/wire_json.h"
#include "agent/wire_openai.h"

namespace corral::agent::wire {
namespace {

using nlohmann::json;
constexpr std::string_view kWhat = "anthropic";

// tool_use.input must be an object. Calls came from Anthropic as objects, so this falls
// back to {} only for a conversation built elsewhere.
json inputObject(const std::string& arguments_json) {
  json parsed = json::parse(arguments_json, nullptr, /*allow_exceptions=*/false);
  return parsed.is_object() ? parsed : json::object();
}

const char* wireRole(Role role) { return role == Role::kAssistant ? "assistant" : "user"; }

// The content blocks one message contributes. The API refuses empty text blocks.
json blocksOf(const Message& m) {
  json blocks = json::array();
  if (m.role == Role::kTool) {
    blocks.push_back({{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}, {"content", m.content}});
    return blocks;
  }
  if (!m.content.empty()) blocks.push_back({{"type", "text"}, {"text", m.content}});
  if (m.role == Role::kAssistant)
    for (const ToolCall& c : m.tool_calls)
      blocks.push_back({{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", inputObject(c.arguments_json)}});
  return blocks;
}

}  // namespace

json anthropicRequest(std::string_view model, const std::vector<Message>& conversation,
                      const std::vector<ToolSpec>& tools, uint32_t max_tokens) {
  std::string system;
  json messages = json::array();
  for (const Message& m : conversation) {
    if (m.role == Role::kSystem) {
      if (!system.empty()) system += "\n\n";
      system += m.content;
      continue;
    }
    json blocks = blocksOf(m);
    if (blocks.empty()) continue;  // an empty turn would be refused and carries nothing
    const char* role = wireRole(m.role);
    if (!messages.empty() && messages.back()["role"] == role) {
      for (json& b : blocks) messages.back()["content"].push_back(std::move(b));
    } else {
      messages.push_back({{"role", role}, {"content", std::move(blocks)}});
    }
  }
  json body = {{"model", model}, {"max_tokens", max_tokens}, {"messages", std::move(messages)}};
  if (!system.empty()) body["system"] = system;
  if (!tools.empty()) {
    json specs = json::array();
    for (const ToolSpec& t : tools)
      specs.push_back({{"name", t.name}, {"description", t.description}, {"input_schema", toolParameters(t)}});
    body["tools"] = std::move(specs);
  }
  return body;
}

Result<ModelReply> parseAnthropicReply(std::string_view body) {
  ASSIGN_OR_RETURN(json doc, parseJson(body, kWhat, /*strict=*/false));
  if (!doc.is_object()) return malformed(kWhat, "response is not an object");
  auto content = doc.find("content");
  if (content == doc.end() || !content->is_array()) return malformed(kWhat, "content missing");
  ModelReply reply;
  for (size_t i = 0; i < content->size(); ++i) {
    const json& block = (*content)[i];
    const std::string path = "content[" + std::to_string(i) + "]";
    if (!block.is_object()) return malformed(kWhat, path + " is not an object");
    auto type = block.find("type");
    if (type == block.end() || !type->is_string()) return malformed(kWhat, path + ".type missing");
    if (*type == "text") {
      auto text = block.find("text");
      if (text == block.end() || !text->is_string()) return malformed(kWhat, path + ".text missing");
      reply.content += text->get_ref<const std::string&>();
    } else if (*type == "tool_use") {
      auto id = block.find("id");
      auto name = block.find("name");
      auto input = block.find("input");
      if (name == block.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
        return malformed(kWhat, path + ".name missing");
      if (id == block.end() || !id->is_string() || id->get_ref<const std::string&>().empty())
        return malformed(kWhat, path + ".id missing");
      if (input == block.end() || !input->is_object()) return malformed(kWhat, path + ".input is not an object");
      reply.tool_calls.push_back({id->get<std::string>(), name->get<std::string>(), dumpJson(*input)});
    }
    // thinking, redacted_thinking and future block types carry nothing the runner acts on.
  }
  if (auto stop = doc.find("stop_reason"); stop != doc.end() && stop->is_string())
    reply.stop_reason = stop->get<std::string>();
  if (auto usage = doc.find("usage"); usage != doc.end() && !usage->is_null()) {
    if (!usage->is_object()) return malformed(kWhat, "usage is not an object");
    ASSIGN_OR_RETURN(reply.usage.input_tokens, optionalCount(*usage, "input_tokens", kWhat, "usage"));
    ASSIGN_OR_RETURN(reply.usage.output_tokens, optionalCount(*usage, "output_tokens", kWhat, "usage"));
  }
  return reply;
}

}  // namespace corral::agent::wire
