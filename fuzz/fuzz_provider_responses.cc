// SPDX-License-Identifier: Apache-2.0
// Fuzzes the model-response parsers (OpenAI, Ollama, Anthropic, Ollama's tag list) and the
// replay transcript parser: no crash, one-line errors, tool calls with names, and a parsed
// reply that can be sent back in the next request without throwing.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/replay_transcript.h"
#include "agent/wire_anthropic.h"
#include "agent/wire_json.h"
#include "agent/wire_ollama.h"
#include "agent/wire_openai.h"
#include "check.h"

namespace corral::fuzz {
namespace {

using agent::Message;
using agent::ModelReply;
using agent::Role;

// The loop's next step with this reply: the assistant turn, a tool result per call, then
// every request builder. dumpJson must not throw on anything a parser let through.
void sendBack(const ModelReply& reply) {
  std::vector<Message> conv = {{Role::kSystem, "s"}, {Role::kUser, "u"}};
  Message assistant{Role::kAssistant, reply.content, reply.tool_calls};
  conv.push_back(assistant);
  for (const agent::ToolCall& c : reply.tool_calls) {
    Message result{Role::kTool, c.arguments_json};
    result.tool_call_id = c.id;
    result.tool_name = c.name;
    conv.push_back(std::move(result));
  }
  std::vector<agent::ToolSpec> tools = {{"read", "r", {}}};
  (void)agent::wire::dumpJson(agent::wire::openaiRequest("m", conv, tools, 16));
  (void)agent::wire::dumpJson(agent::wire::ollamaRequest("m", conv, tools, 16));
  std::string anthropic = agent::wire::dumpJson(agent::wire::anthropicRequest("m", conv, tools, 16));
  // The Messages API needs alternation; the builder must always produce it.
  auto doc = nlohmann::json::parse(anthropic);
  const auto& msgs = doc["messages"];
  for (size_t i = 1; i < msgs.size(); ++i)
    PROPERTY(msgs[i]["role"] != msgs[i - 1]["role"], "anthropic roles do not alternate: " + anthropic);
}

void checkReply(const Result<ModelReply>& r, std::string_view parser) {
  PROPERTY_ONE_LINE_ERROR(r);
  if (!r.ok()) {
    PROPERTY(r.error().code() == static_cast<int>(Errc::kInvalidArgument),
             std::string(parser) + " error is not kInvalidArgument: " + r.error().message());
    return;
  }
  for (const agent::ToolCall& c : r->tool_calls) {
    PROPERTY(!c.name.empty(), std::string(parser) + ": tool call with an empty name accepted");
    PROPERTY(!c.id.empty(), std::string(parser) + ": tool call without an id");
  }
  sendBack(*r);
}

void checkTranscript(std::string_view text) {
  auto r = agent::parseReplayTranscript(text);
  PROPERTY_ONE_LINE_ERROR(r);
  if (!r.ok()) return;
  PROPERTY(!r->empty(), std::string("empty transcript accepted"));
  for (size_t i = 0; i < r->size(); ++i) {
    const agent::ReplayReply& reply = (*r)[i];
    PROPERTY(reply.reply.response_bytes == reply.wire.size(), "response_bytes is not the wire size: " + reply.wire);
    PROPERTY(agent::wire::parseJson(reply.wire, "wire", true).ok(), "reply wire is not JSON: " + reply.wire);
    for (size_t j = 0; j < reply.reply.tool_calls.size(); ++j) {
      const agent::ToolCall& c = reply.reply.tool_calls[j];
      PROPERTY(!c.name.empty(), "replay: tool call with an empty name accepted: " + reply.wire);
      PROPERTY(c.id == "call_" + std::to_string(i) + "_" + std::to_string(j), "replay: unexpected id " + c.id);
    }
    if (!reply.error) sendBack(reply.reply);
  }
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  namespace wire = corral::agent::wire;
  corral::fuzz::checkReply(wire::parseOpenaiReply(text, 0), "openai");
  corral::fuzz::checkReply(wire::parseOllamaReply(text, 0), "ollama");
  corral::fuzz::checkReply(wire::parseAnthropicReply(text), "anthropic");
  auto tags = wire::ollamaTagsList(text, "llama3");
  PROPERTY_ONE_LINE_ERROR(tags);
  corral::fuzz::checkTranscript(text);
  return 0;
}
