// SPDX-License-Identifier: Apache-2.0
#include "agent/provider_ollama.h"

#include <gtest/gtest.h>

#include "agent/stub_http_server_test_util.h"
#include "agent/wire_ollama.h"

namespace corral::agent {
namespace {

using nlohmann::json;
using testing::StubHttpServer;
constexpr int kInvalid = static_cast<int>(Errc::kInvalidArgument);
constexpr int kRefused = static_cast<int>(Errc::kRefused);

constexpr const char* kTags =
    R"({"models":[{"name":"llama3.1:latest","model":"llama3.1:latest","size":1},
                  {"name":"qwen2.5-coder:7b","model":"qwen2.5-coder:7b"}]})";

std::unique_ptr<Provider> ollama(const StubHttpServer& s, const std::string& model) {
  ProviderConfig c;
  c.provider = "ollama";
  c.endpoint = s.url();
  c.model = model;
  c.max_tokens = 77;
  auto p = makeProvider(std::move(c));
  EXPECT_TRUE(p.ok()) << p.error().message();
  return p.ok() ? std::move(*p) : nullptr;
}

TEST(OllamaPreflight, PassesWhenTheModelIsListedExactlyOrAsLatest) {
  for (const char* model : {"llama3.1:latest", "llama3.1", "qwen2.5-coder:7b"}) {
    StubHttpServer s;
    s.enqueueJson(kTags);
    auto p = ollama(s, model);
    auto r = p->preflight();
    EXPECT_TRUE(r.ok()) << model << ": " << r.error().message();
    auto reqs = s.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].method, "GET");
    EXPECT_EQ(reqs[0].path, "/api/tags");
  }
}

TEST(OllamaPreflight, FailsNamingTheModelWhenNotListed) {
  for (const char* model : {"mistral", "qwen2.5-coder", "llama3.1:8b"}) {
    StubHttpServer s;
    s.enqueueJson(kTags);
    auto r = ollama(s, model)->preflight();
    ASSERT_FALSE(r.ok()) << model << " passed preflight";
    EXPECT_EQ(r.error().code(), kRefused);
    EXPECT_NE(r.error().message().find(std::string("\"") + model + "\" is not listed"), std::string::npos)
        << r.error().message();
  }
}

TEST(OllamaPreflight, MalformedTagListAndHttpErrorsAreReported) {
  StubHttpServer s;
  s.enqueueJson(R"({"nope":[]})");
  s.enqueueJson("{}", 404);
  auto p = ollama(s, "llama3.1");
  auto bad = p->preflight();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), kInvalid);
  EXPECT_NE(bad.error().message().find("models missing"), std::string::npos) << bad.error().message();
  auto missing = p->preflight();
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("HTTP 404"), std::string::npos) << missing.error().message();
}

TEST(OllamaWire, RequestTranslatesToolCallsToObjectsAndResultsByName) {
  StubHttpServer s;
  s.enqueueJson(R"({"message":{"role":"assistant","content":"ok"},"done":true})");
  Message assistant{Role::kAssistant, "", {{"call_0", "read", R"({"path":"a.txt"})"}}};
  Message result{Role::kTool, "file text"};
  result.tool_call_id = "call_0";
  result.tool_name = "read";
  std::vector<ToolSpec> tools = {{"read", "Read a file", json{{"type", "object"}}}};
  auto p = ollama(s, "llama3.1");
  ASSERT_TRUE(p->complete({{Role::kSystem, "sys"}, {Role::kUser, "go"}, assistant, result}, tools).ok());
  auto reqs = s.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/api/chat");
  json expected = R"({
    "model": "llama3.1", "stream": false, "options": {"num_predict": 77},
    "messages": [
      {"role": "system", "content": "sys"},
      {"role": "user", "content": "go"},
      {"role": "assistant", "content": "",
       "tool_calls": [{"function": {"name": "read", "arguments": {"path": "a.txt"}}}]},
      {"role": "tool", "content": "file text", "tool_name": "read"}],
    "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file",
               "parameters": {"type": "object"}}}]})"_json;
  EXPECT_EQ(json::parse(reqs[0].body), expected) << reqs[0].body;
}

TEST(OllamaWire, ParsesObjectArgumentsUsageAndNumbersCallsAcrossReplies) {
  StubHttpServer s;
  const char* reply = R"({"model":"m","message":{"role":"assistant","content":"",
      "tool_calls":[{"function":{"name":"read","arguments":{"path":"a.txt","n":2}}},
                    {"function":{"name":"ls","arguments":{}}}]},
      "done":true,"done_reason":"stop","prompt_eval_count":31,"eval_count":9})";
  s.enqueueJson(reply);
  s.enqueueJson(reply);
  auto p = ollama(s, "m");
  auto first = p->complete({{Role::kUser, "go"}}, {});
  auto second = p->complete({{Role::kUser, "go"}}, {});
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_EQ(first->tool_calls.size(), 2u);
  EXPECT_EQ(first->tool_calls[0].name, "read");
  EXPECT_EQ(json::parse(first->tool_calls[0].arguments_json), json({{"path", "a.txt"}, {"n", 2}}));
  EXPECT_EQ(first->tool_calls[1].arguments_json, "{}");
  EXPECT_EQ(first->tool_calls[0].id, "call_0");
  EXPECT_EQ(first->tool_calls[1].id, "call_1");
  EXPECT_EQ(second->tool_calls[0].id, "call_2") << "ids must stay unique across the conversation";
  EXPECT_EQ(first->stop_reason, "stop");
  EXPECT_EQ(first->usage.input_tokens, 31u);
  EXPECT_EQ(first->usage.output_tokens, 9u);
}

TEST(OllamaWire, MalformedShapesAreRefused) {
  for (const char* body : {R"({"done":true})", R"({"message":"x"})", R"({"message":{"content":[]}})",
                           R"({"message":{"tool_calls":[{"function":{"arguments":{}}}]}})",
                           R"({"message":{"tool_calls":[{"function":{"name":"x","arguments":7}}]}})",
                           R"({"message":{},"eval_count":"many"})", R"({"message":{},"prompt_eval_count":4294967296})"}) {
    auto r = wire::parseOllamaReply(body, 0);
    ASSERT_FALSE(r.ok()) << "accepted " << body;
    EXPECT_EQ(r.error().code(), kInvalid);
    EXPECT_EQ(r.error().message().rfind("ollama: ", 0), 0u) << r.error().message();
  }
}

}  // namespace
}  // namespace corral::agent
