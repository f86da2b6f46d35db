// SPDX-License-Identifier: Apache-2.0
#include "agent/provider_anthropic.h"

#include <gtest/gtest.h>

#include "agent/stub_http_server_test_util.h"
#include "agent/wire_anthropic.h"

namespace corral::agent {
namespace {

using nlohmann::json;
using testing::StubHttpServer;
constexpr int kInvalid = static_cast<int>(Errc::kInvalidArgument);

Message toolResult(const std::string& id, const std::string& name, const std::string& content) {
  Message m{Role::kTool, content};
  m.tool_call_id = id;
  m.tool_name = name;
  return m;
}

TEST(AnthropicWire, RequestCarriesHeadersSystemToolsAndMergedToolResults) {
  StubHttpServer s;
  s.enqueueJson(R"({"content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"})");
  ProviderConfig c;
  c.provider = "anthropic";
  c.endpoint = s.url();
  c.model = "claude-test";
  c.max_tokens = 900;
  c.api_key.emplace("sk-SENTINEL-7c1e");
  auto p = makeProvider(std::move(c));
  ASSERT_TRUE(p.ok()) << p.error().message();
  Message assistant{Role::kAssistant, "two reads",
                    {{"toolu_1", "read", R"({"path":"a"})"}, {"toolu_2", "read", R"({"path":"b"})"}}};
  std::vector<Message> conv = {{Role::kSystem, "rule one"}, {Role::kSystem, "rule two"}, {Role::kUser, "go"},
                               assistant, toolResult("toolu_1", "read", "A"), toolResult("toolu_2", "read", "B"),
                               {Role::kUser, "and now?"}};
  std::vector<ToolSpec> tools = {{"read", "Read a file", json{{"type", "object"}}}};
  ASSERT_TRUE((*p)->complete(conv, tools).ok());
  auto reqs = s.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/v1/messages");
  EXPECT_EQ(reqs[0].headers["anthropic-version"], "2023-06-01");
  EXPECT_EQ(reqs[0].headers["x-api-key"], "sk-SENTINEL-7c1e");
  EXPECT_EQ(reqs[0].headers.count("authorization"), 0u);
  json expected = R"({
    "model": "claude-test", "max_tokens": 900, "system": "rule one\n\nrule two",
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "go"}]},
      {"role": "assistant", "content": [
        {"type": "text", "text": "two reads"},
        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
        {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "b"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "A"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "B"},
        {"type": "text", "text": "and now?"}]}],
    "tools": [{"name": "read", "description": "Read a file", "input_schema": {"type": "object"}}]})"_json;
  EXPECT_EQ(json::parse(reqs[0].body), expected) << reqs[0].body;
}

TEST(AnthropicWire, RolesAlternateEvenWhenTheConversationRepeatsARole) {
  json body = wire::anthropicRequest(
      "m", {{Role::kUser, "a"}, {Role::kUser, "b"}, {Role::kAssistant, ""}, {Role::kAssistant, "c"},
            {Role::kAssistant, "d"}, toolResult("t", "x", "r")},
      {}, 10);
  const json& msgs = body["messages"];
  ASSERT_EQ(msgs.size(), 3u) << msgs.dump();
  for (size_t i = 1; i < msgs.size(); ++i) EXPECT_NE(msgs[i]["role"], msgs[i - 1]["role"]) << msgs.dump();
  EXPECT_EQ(msgs[0]["content"].size(), 2u);
  EXPECT_EQ(msgs[1]["content"].size(), 2u) << "the empty assistant turn adds no empty text block";
  EXPECT_FALSE(body.contains("system"));
  EXPECT_FALSE(body.contains("tools"));
}

TEST(AnthropicWire, ParsesTextBlocksToolUseStopReasonAndUsage) {
  auto r = wire::parseAnthropicReply(R"({"id":"msg_1","type":"message","role":"assistant",
      "content":[{"type":"thinking","thinking":"..."},{"type":"text","text":"Reading "},
                 {"type":"tool_use","id":"toolu_9","name":"read","input":{"path":"a.txt"}},
                 {"type":"text","text":"now."}],
      "stop_reason":"tool_use","usage":{"input_tokens":120,"output_tokens":33}})");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->content, "Reading now.");
  ASSERT_EQ(r->tool_calls.size(), 1u);
  EXPECT_EQ(r->tool_calls[0].id, "toolu_9");
  EXPECT_EQ(r->tool_calls[0].name, "read");
  EXPECT_EQ(r->tool_calls[0].arguments_json, R"({"path":"a.txt"})");
  EXPECT_EQ(r->stop_reason, "tool_use");
  EXPECT_EQ(r->usage.input_tokens, 120u);
  EXPECT_EQ(r->usage.output_tokens, 33u);
}

TEST(AnthropicWire, MalformedShapesAreRefused) {
  for (const char* body : {R"({"type":"message"})", R"({"content":{}})", R"({"content":[{"text":"x"}]})",
                           R"({"content":[{"type":"text"}]})",
                           R"({"content":[{"type":"tool_use","id":"t","input":{}}]})",
                           R"({"content":[{"type":"tool_use","name":"x","input":{}}]})",
                           R"({"content":[{"type":"tool_use","id":"t","name":"x","input":"{}"}]})",
                           R"({"content":[],"usage":{"input_tokens":-3}})",
                           R"({"content":[],"usage":{"output_tokens":9007199254740993}})"}) {
    auto r = wire::parseAnthropicReply(body);
    ASSERT_FALSE(r.ok()) << "accepted " << body;
    EXPECT_EQ(r.error().code(), kInvalid);
    EXPECT_EQ(r.error().message().rfind("anthropic: ", 0), 0u) << r.error().message();
  }
}

}  // namespace
}  // namespace corral::agent
