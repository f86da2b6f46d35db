// SPDX-License-Identifier: Apache-2.0
// The transport contract every network provider keeps, run against each of them: error
// classes, the key never in an error, no redirects, no proxy from the environment.
#include <gtest/gtest.h>

#include <cstdlib>

#include "agent/provider.h"
#include "agent/stub_http_server_test_util.h"
#include "base/sha256.h"

namespace corral::agent {
namespace {

using testing::StubHttpServer;
constexpr int kIo = static_cast<int>(Errc::kIo);
constexpr int kRefused = static_cast<int>(Errc::kRefused);
constexpr int kInvalid = static_cast<int>(Errc::kInvalidArgument);
constexpr const char* kSentinelKey = "sk-SENTINEL-7c1e";
constexpr const char* kSentinelPrompt = "prompt-SENTINEL-41d2";

struct Flavour {
  const char* provider;
  const char* base_path;      // appended to the stub URL to form the endpoint
  const char* request_path;   // where complete() must POST
  const char* auth_header;    // lowercased
  const char* auth_value;     // with the key
  const char* good_reply;     // a minimal valid reply carrying "hello"
};

const Flavour kFlavours[] = {
    {"openai", "/v1", "/v1/chat/completions", "authorization", "Bearer sk-SENTINEL-7c1e",
     R"({"choices":[{"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]})"},
    {"ollama", "", "/api/chat", "authorization", "Bearer sk-SENTINEL-7c1e",
     R"({"message":{"role":"assistant","content":"hello"},"done":true,"done_reason":"stop"})"},
    {"anthropic", "", "/v1/messages", "x-api-key", "sk-SENTINEL-7c1e",
     R"({"content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn"})"},
};

class ProviderTransport : public ::testing::TestWithParam<Flavour> {
 protected:
  std::unique_ptr<Provider> make(bool with_key, std::chrono::milliseconds timeout = std::chrono::seconds(5),
                                 const std::string& endpoint = "") {
    ProviderConfig c;
    c.provider = GetParam().provider;
    c.endpoint = endpoint.empty() ? server_.url(GetParam().base_path) : endpoint;
    c.model = "m1";
    if (with_key) c.api_key.emplace(kSentinelKey);
    c.timeout = timeout;
    c.max_response_bytes = 64 * 1024;
    auto p = makeProvider(std::move(c));
    EXPECT_TRUE(p.ok()) << p.error().message();
    return p.ok() ? std::move(*p) : nullptr;
  }
  Result<ModelReply> call(Provider& p) {
    return p.complete({{Role::kSystem, "sys"}, {Role::kUser, kSentinelPrompt}}, {});
  }
  // The failure contract: the code, and a message naming the host that never carries the
  // key or the prompt.
  void expectError(const Result<ModelReply>& r, int code, const std::string& must_contain) {
    ASSERT_FALSE(r.ok()) << "call succeeded";
    const std::string m = r.error().message();
    EXPECT_EQ(r.error().code(), code) << m;
    EXPECT_NE(m.find(must_contain), std::string::npos) << "missing '" << must_contain << "' in: " << m;
    EXPECT_EQ(m.find("SENTINEL"), std::string::npos) << "key or prompt in error: " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  std::string host() const { return "127.0.0.1:" + std::to_string(server_.port()); }

  StubHttpServer server_;
};

TEST_P(ProviderTransport, SendsToItsPathWithAuthHeaderOnlyWhenKeySet) {
  server_.enqueueJson(GetParam().good_reply);
  server_.enqueueJson(GetParam().good_reply);
  auto with = make(true);
  auto without = make(false);
  ASSERT_TRUE(with && without);
  ASSERT_TRUE(call(*with).ok());
  ASSERT_TRUE(call(*without).ok());
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  for (auto& r : reqs) {
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.path, GetParam().request_path);
    EXPECT_EQ(r.headers["content-type"], "application/json");
  }
  EXPECT_EQ(reqs[0].headers[GetParam().auth_header], GetParam().auth_value);
  EXPECT_EQ(reqs[1].headers.count(GetParam().auth_header), 0u) << "auth header sent without a key";
  EXPECT_EQ(reqs[1].head.find("SENTINEL"), std::string::npos);
}

TEST_P(ProviderTransport, StampsResponseSizeAndHash) {
  server_.enqueueJson(GetParam().good_reply);
  auto p = make(true);
  auto r = call(*p);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->content, "hello");
  EXPECT_EQ(r->response_bytes, std::string(GetParam().good_reply).size());
  EXPECT_EQ(r->response_sha256, audit::sha256Hex(GetParam().good_reply));
}

TEST_P(ProviderTransport, ServerErrorsAndRateLimitsAreRetryable) {
  for (int status : {500, 503, 429}) {
    server_.enqueueJson(R"({"error":"SENTINEL-body"})", status);
    auto p = make(true);
    expectError(call(*p), kIo, host() + ": HTTP " + std::to_string(status));
  }
}

TEST_P(ProviderTransport, UnauthorizedIsFinalAndNeverShowsTheKey) {
  server_.enqueueJson(R"({"error":"invalid key sk-SENTINEL-7c1e"})", 401);
  auto p = make(true);
  auto r = call(*p);
  expectError(r, kRefused, "HTTP 401");
  EXPECT_FALSE(isRetryable(r.error()));
  EXPECT_EQ(r.error().message().rfind(GetParam().provider, 0), 0u) << "message does not start with the provider";
}

TEST_P(ProviderTransport, ConnectionRefusedIsRetryable) {
  // The port of a stub that has shut down: nothing listens there any more.
  std::string endpoint;
  {
    StubHttpServer gone;
    endpoint = gone.url(GetParam().base_path);
  }
  auto p = make(true, std::chrono::seconds(5), endpoint);
  auto r = call(*p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), kIo) << r.error().message();
}

TEST_P(ProviderTransport, TimeoutIsRetryable) {
  StubHttpServer::Response silent;
  silent.never_answer = true;
  server_.enqueue(silent);
  auto p = make(true, std::chrono::milliseconds(300));
  expectError(call(*p), kIo, host());
}

TEST_P(ProviderTransport, OversizedResponseIsMalformed) {
  server_.enqueueJson(std::string(100 * 1024, ' ') + GetParam().good_reply);
  auto p = make(true);
  expectError(call(*p), kInvalid, "response larger than 65536 bytes");
}

TEST_P(ProviderTransport, InvalidJsonIsMalformed) {
  server_.enqueueJson(R"({"choices": [ SENTINEL)");
  auto p = make(true);
  expectError(call(*p), kInvalid, "invalid JSON");
}

TEST_P(ProviderTransport, WrongShapeIsMalformed) {
  server_.enqueueJson(R"({"SENTINEL":1})");
  auto p = make(true);
  expectError(call(*p), kInvalid, GetParam().provider);
}

TEST_P(ProviderTransport, RedirectIsNotFollowed) {
  StubHttpServer::Response moved;
  moved.status = 302;
  moved.headers = {"Location: " + server_.url(GetParam().request_path)};
  server_.enqueue(moved);
  server_.enqueueJson(GetParam().good_reply);
  auto p = make(true);
  expectError(call(*p), kRefused, "HTTP 302");
  EXPECT_EQ(server_.requests().size(), 1u) << "redirect followed";
}

TEST_P(ProviderTransport, ProxyEnvironmentIsIgnored) {
  StubHttpServer proxy;
  server_.enqueueJson(GetParam().good_reply);
  ::setenv("HTTP_PROXY", proxy.url().c_str(), 1);
  ::setenv("http_proxy", proxy.url().c_str(), 1);
  auto p = make(true);
  auto r = call(*p);
  ::unsetenv("HTTP_PROXY");
  ::unsetenv("http_proxy");
  EXPECT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(proxy.requests().size(), 0u) << "the model call went through $http_proxy";
}

INSTANTIATE_TEST_SUITE_P(NetworkProviders, ProviderTransport, ::testing::ValuesIn(kFlavours),
                         [](const auto& info) { return std::string(info.param.provider); });

}  // namespace
}  // namespace corral::agent
