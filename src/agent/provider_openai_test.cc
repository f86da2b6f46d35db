// SPDX-License-Identifier: Apache-2.0
#include "agent/provider_openai.h"

#include <gtest/gtest.h>

#include "agent/stub_http_server_test_util.h"
#include "agent/wire_openai.h"

namespace corral::agent {
namespace {

using nlohmann::json;
using testing::StubHttpServer;
constexpr int kInvalid = static_cast<int>(Errc::kInvalidArgument);

std::vector<Message> toolConversation() {
  Message assistant{Role::kAssistant, "let me look", {{"call_a", "read", R"({"path": "a.txt"})"}}};
  Message result{Role::kTool, "file text"};
  result.tool_call_id = "call_a";
  result.tool_name = "read";
  return {{Role::kSystem, "be brief"}, {Role::kUser, "read a.txt"}, assistant, result};
}

std::vector<ToolSpec> tools() {
  return {{"read", "Read a file", json{{"type", "object"}, {"properties", {{"path", {{"type", "string"}}}}}}},
          {"done", "Finish", json()}};
}

TEST(OpenAiWire, RequestTranslatesEveryRoleAndTool) {
  StubHttpServer s;
  s.enqueueJson(R"({"choices":[{"message":{"content":"ok"}}]})");
  ProviderConfig c;
  c.provider = "openai";
  c.endpoint = s.url("/v1/");
  c.model = "gpt-test";
  c.max_tokens = 123;
  auto p = makeProvider(std::move(c));
  ASSERT_TRUE(p.ok()) << p.error().message();
  ASSERT_TRUE((*p)->complete(toolConversation(), tools()).ok());
  auto reqs = s.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/v1/chat/completions");
  json expected = R"({
    "model": "gpt-test", "max_tokens": 123,
    "messages": [
      {"role": "system", "content": "be brief"},
      {"role": "user", "content": "read a.txt"},
      {"role": "assistant", "content": "let me look",
       "tool_calls": [{"id": "call_a", "type": "function",
                       "function": {"name": "read", "arguments": "{\"path\": \"a.txt\"}"}}]},
      {"role": "tool", "tool_call_id": "call_a", "content": "file text"}],
    "tools": [
      {"type": "function", "function": {"name": "read", "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}},
      {"type": "function", "function": {"name": "done", "description": "Finish",
        "parameters": {"type": "object", "properties": {}}}}]})"_json;
  EXPECT_EQ(json::parse(reqs[0].body), expected) << reqs[0].body;
}

TEST(OpenAiWire, AssistantWithOnlyToolCallsSendsNullContentAndNoToolsKeyWhenNone) {
  Message a{Role::kAssistant, "", {{"c1", "x", "{}"}}};
  json body = wire::openaiRequest("m", {a}, {}, 5);
  EXPECT_TRUE(body["messages"][0]["content"].is_null());
  EXPECT_FALSE(body.contains("tools"));
}

TEST(OpenAiWire, InvalidUtf8InAToolResultIsReplacedNotThrown) {
  Message t{Role::kTool, std::string("bad \xff\xfe bytes")};
  t.tool_call_id = "c";
  std::string dumped = wire::openaiRequest("m", {t}, {}, 5).dump(-1, ' ', false, json::error_handler_t::replace);
  EXPECT_NE(dumped.find("\xef\xbf\xbd"), std::string::npos);
}

TEST(OpenAiWire, ParsesTextToolCallsUsageAndKeepsArgumentsRaw) {
  auto r = wire::parseOpenaiReply(R"({"choices":[{"index":0,"finish_reason":"tool_calls","message":{
      "role":"assistant","content":"thinking",
      "tool_calls":[{"id":"call_x","type":"function","function":{"name":"read","arguments":"{\"path\":  \"a.txt\"}"}},
                    {"type":"function","function":{"name":"ls","arguments":"{not json"}}]}}],
      "usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}})",
                                  40);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->content, "thinking");
  EXPECT_EQ(r->stop_reason, "tool_calls");
  ASSERT_EQ(r->tool_calls.size(), 2u);
  EXPECT_EQ(r->tool_calls[0].id, "call_x");
  EXPECT_EQ(r->tool_calls[0].name, "read");
  EXPECT_EQ(r->tool_calls[0].arguments_json, R"({"path":  "a.txt"})");
  EXPECT_EQ(r->tool_calls[1].id, "call_41") << "a call without an id is numbered";
  EXPECT_EQ(r->tool_calls[1].arguments_json, "{not json") << "the runner, not the parser, judges arguments";
  EXPECT_EQ(r->usage.input_tokens, 11u);
  EXPECT_EQ(r->usage.output_tokens, 7u);
}

TEST(OpenAiWire, NullContentIsEmptyText) {
  auto r = wire::parseOpenaiReply(R"({"choices":[{"message":{"content":null,"tool_calls":[]}}]})", 0);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->content, "");
  EXPECT_TRUE(r->tool_calls.empty());
}

TEST(OpenAiWire, MalformedShapesAreRefusedWithTheFieldPath) {
  struct Case {
    const char* body;
    const char* reason;
  };
  for (Case c : {Case{"[]", "response is not an object"},
                 {R"({"choices":[]})", "choices missing or empty"},
                 {R"({"choices":[{}]})", "openai: choices[0].message missing"},
                 {R"({"choices":[{"message":{"content":5}}]})", "content is not a string"},
                 {R"({"choices":[{"message":{"tool_calls":{}}}]})", "tool_calls is not an array"},
                 {R"({"choices":[{"message":{"tool_calls":[{"function":{"arguments":"{}"}}]}}]})",
                  "tool_calls[0].function.name missing"},
                 {R"({"choices":[{"message":{"tool_calls":[{"function":{"name":"","arguments":"{}"}}]}}]})",
                  "tool_calls[0].function.name missing"},
                 {R"({"choices":[{"message":{"tool_calls":[{"function":{"name":"x","arguments":3}}]}}]})",
                  "arguments is not a string"},
                 {R"({"choices":[{"message":{"tool_calls":[{"function":{"name":"x"}}]}}]})", "arguments missing"},
                 {R"({"choices":[{"message":{}}],"usage":{"prompt_tokens":-1}})", "usage.prompt_tokens"},
                 {R"({"choices":[{"message":{}}],"usage":{"completion_tokens":1.5}})", "usage.completion_tokens"},
                 // Counts the trace could not even hold (2^53) would stop the record being sealed.
                 {R"({"choices":[{"message":{}}],"usage":{"prompt_tokens":9007199254740992}})",
                  "usage.prompt_tokens is over 4294967295"},
                 {R"({"choices":[{"message":{}}],"usage":{"completion_tokens":4294967296}})",
                  "usage.completion_tokens is over 4294967295"},
                 {R"({"choices":[{"message":{}}],"usage":{"prompt_tokens":18446744073709551615}})",
                  "usage.prompt_tokens is over"}}) {
    auto r = wire::parseOpenaiReply(c.body, 0);
    ASSERT_FALSE(r.ok()) << "accepted " << c.body;
    EXPECT_EQ(r.error().code(), kInvalid);
    EXPECT_NE(r.error().message().find(c.reason), std::string::npos) << r.error().message();
  }
}

}  // namespace
}  // namespace corral::agent
