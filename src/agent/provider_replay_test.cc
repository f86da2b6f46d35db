// SPDX-License-Identifier: Apache-2.0
#include "agent/provider_replay.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/sha256.h"

namespace corral::agent {
namespace {

using nlohmann::json;
constexpr int kIo = static_cast<int>(Errc::kIo);
constexpr int kInvalid = static_cast<int>(Errc::kInvalidArgument);

class Replay : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/corral-replay-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& text) {
    std::string path = dir_ + "/t" + std::to_string(n_++) + ".json";
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::unique_ptr<Provider> provider(const std::string& path) {
    ProviderConfig c;
    c.provider = "replay";
    c.transcript_path = path;
    auto p = makeProvider(std::move(c));
    EXPECT_TRUE(p.ok()) << p.error().message();
    return p.ok() ? std::move(*p) : nullptr;
  }
  Result<ModelReply> next(Provider& p) { return p.complete({{Role::kUser, "x"}}, {}); }

  std::string dir_;
  int n_ = 0;
};

constexpr const char* kTranscript = R"({"version":1,"replies":[
  {"content":"reading","tool_calls":[{"name":"read","arguments":{"path":"a.txt"}},
                                     {"name":"x","arguments_raw":"{not json"}],
   "usage":{"input_tokens":1,"output_tokens":2},"stop_reason":"tool_calls"},
  {"content":"done"}]})";

TEST_F(Replay, PlaysRepliesInOrderWithIdsUsageAndHashes) {
  auto p = provider(write(kTranscript));
  ASSERT_TRUE(p->preflight().ok());
  auto first = next(*p);
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_EQ(first->content, "reading");
  ASSERT_EQ(first->tool_calls.size(), 2u);
  EXPECT_EQ(first->tool_calls[0].id, "call_0_0");
  EXPECT_EQ(first->tool_calls[0].name, "read");
  EXPECT_EQ(first->tool_calls[0].arguments_json, R"({"path":"a.txt"})");
  EXPECT_EQ(first->tool_calls[1].id, "call_0_1");
  EXPECT_EQ(first->tool_calls[1].arguments_json, "{not json");
  EXPECT_EQ(first->usage.input_tokens, 1u);
  EXPECT_EQ(first->usage.output_tokens, 2u);
  EXPECT_EQ(first->stop_reason, "tool_calls");
  const std::string wire0 = json::parse(kTranscript)["replies"][0].dump();
  EXPECT_EQ(first->response_bytes, wire0.size());
  EXPECT_EQ(first->response_sha256, audit::sha256Hex(wire0));

  auto second = next(*p);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->content, "done");
  EXPECT_TRUE(second->tool_calls.empty());
  EXPECT_EQ(second->stop_reason, "stop") << "default stop_reason of a reply without calls";
  EXPECT_EQ(second->response_sha256, audit::sha256Hex(R"({"content":"done"})"));
}

TEST_F(Replay, ExhaustedTranscriptIsAFinalError) {
  auto p = provider(write(R"({"version":1,"replies":[{"content":"a"}]})"));
  ASSERT_TRUE(next(*p).ok()) << "complete() without preflight loads the transcript itself";
  auto r = next(*p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), kInvalid);
  EXPECT_EQ(r.error().message(), "replay: transcript exhausted after 1 replies");
  EXPECT_FALSE(isRetryable(r.error()));
}

TEST_F(Replay, InjectedErrorsFailTheirCallAndConsumeTheirSlot) {
  auto p = provider(write(R"({"version":1,"replies":[{"error":{"kind":"transient"}},
      {"error":{"kind":"malformed"}},{"content":"after"}]})"));
  ASSERT_TRUE(p->preflight().ok());
  auto transient = next(*p);
  ASSERT_FALSE(transient.ok());
  EXPECT_EQ(transient.error().code(), kIo);
  EXPECT_TRUE(isRetryable(transient.error()));
  auto bad = next(*p);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), kInvalid);
  EXPECT_FALSE(isRetryable(bad.error()));
  auto ok = next(*p);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->content, "after");
}

TEST_F(Replay, PreflightRefusesEveryBrokenRule) {
  struct Case {
    const char* text;
    const char* reason;
  };
  for (Case c : {
           Case{"{", "invalid JSON"},
           {"[]", "transcript: must be an object"},
           {R"({"replies":[{}]})", "version: must be 1"},
           {R"({"version":2,"replies":[{}]})", "version: must be 1"},
           {R"({"version":1.0,"replies":[{}]})", "version: must be 1"},
           {R"({"version":1,"replies":[]})", "replies: must not be empty"},
           {R"({"version":1,"replies":{}})", "replies: must be an array"},
           {R"({"version":1,"replies":[{}],"extra":1})", "transcript: unknown field"},
           {R"({"version":1,"version":1,"replies":[{}]})", "duplicate object key"},
           {R"({"version":1,"replies":[{"contents":"x"}]})", "replies[0]: unknown field"},
           {R"({"version":1,"replies":[{"content":1}]})", "replies[0].content: must be a string"},
           {R"({"version":1,"replies":[{"tool_calls":[{"name":"r"}]}]})", "needs exactly one"},
           {R"({"version":1,"replies":[{"tool_calls":[{"name":"r","arguments":{},"arguments_raw":"{}"}]}]})",
            "needs exactly one"},
           {R"({"version":1,"replies":[{"tool_calls":[{"name":"r","arguments":"{}"}]}]})",
            "tool_calls[0].arguments: must be an object"},
           {R"({"version":1,"replies":[{"tool_calls":[{"name":"r","arguments_raw":{}}]}]})",
            "arguments_raw: must be a string"},
           {R"({"version":1,"replies":[{"tool_calls":[{"name":"","arguments":{}}]}]})",
            "tool_calls[0].name: must be a non-empty string"},
           {R"({"version":1,"replies":[{"tool_calls":[{"arguments":{}}]}]})", "name: must be a non-empty string"},
           {R"({"version":1,"replies":[{"tool_calls":[{"name":"r","arguments":{},"id":"c"}]}]})",
            "tool_calls[0]: unknown field"},
           {R"({"version":1,"replies":[{"usage":{"input_tokens":-1}}]})", "usage.input_tokens"},
           {R"({"version":1,"replies":[{"usage":{"input_tokens":1.5}}]})", "usage.input_tokens"},
           {R"({"version":1,"replies":[{"usage":{"cached":1}}]})", "usage: unknown field"},
           {R"({"version":1,"replies":[{"stop_reason":3}]})", "stop_reason: must be a string"},
           {R"({"version":1,"replies":[{"error":{"kind":"fatal"}}]})", "error.kind: must be"},
           {R"({"version":1,"replies":[{"error":{"kind":"transient","why":"x"}}]})", "error: unknown field"},
           {R"({"version":1,"replies":[{"error":{"kind":"transient"},"content":"x"}]})", "has no other field"},
       }) {
    auto r = provider(write(c.text))->preflight();
    ASSERT_FALSE(r.ok()) << "accepted " << c.text;
    EXPECT_EQ(r.error().code(), kInvalid) << c.text;
    EXPECT_NE(r.error().message().find(c.reason), std::string::npos) << c.text << " -> " << r.error().message();
  }
}

TEST_F(Replay, RefusesMissingNonRegularAndOversizedFiles) {
  EXPECT_FALSE(provider(dir_ + "/absent.json")->preflight().ok());
  auto not_file = provider(dir_)->preflight();
  ASSERT_FALSE(not_file.ok());
  EXPECT_NE(not_file.error().message().find("not a regular file"), std::string::npos) << not_file.error().message();

  // A valid transcript padded past 16 MiB with whitespace: only the size rule can refuse it.
  std::string big = std::string(R"({"version":1,"replies":[{"content":"a"}]})") + std::string(kMaxTranscriptBytes, ' ');
  auto oversized = provider(write(big))->preflight();
  ASSERT_FALSE(oversized.ok());
  EXPECT_EQ(oversized.error().code(), kInvalid);
  EXPECT_NE(oversized.error().message().find("larger than 16777216 bytes"), std::string::npos)
      << oversized.error().message();
  big.resize(big.size() - 64);  // control: at the limit it loads
  EXPECT_TRUE(provider(write(big))->preflight().ok());
}

}  // namespace
}  // namespace corral::agent
