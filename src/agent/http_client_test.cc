// SPDX-License-Identifier: Apache-2.0
#include "agent/http_client.h"

#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>

#include "agent/stub_http_server_test_util.h"

namespace corral::agent {
namespace {

using testing::StubHttpServer;
constexpr int kIo = static_cast<int>(Errc::kIo);
constexpr int kRefused = static_cast<int>(Errc::kRefused);
constexpr int kInvalid = static_cast<int>(Errc::kInvalidArgument);

HttpRequest post(const StubHttpServer& s, const std::string& path = "/x") {
  HttpRequest r;
  r.url = s.url(path);
  r.host = "127.0.0.1:" + std::to_string(s.port());
  r.body = "{}";
  r.timeout = std::chrono::milliseconds(5000);
  return r;
}

// A port on 127.0.0.1 that nobody listens on: bound, never listened, so the kernel refuses.
struct ClosedPort {
  UniqueFd fd{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  uint16_t port = 0;
  ClosedPort() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
  }
};

TEST(ParseEndpoint, AcceptsHttpAndHttpsBaseUrls) {
  auto e = parseEndpoint("http://127.0.0.1:11434/");
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(e->base, "http://127.0.0.1:11434");
  EXPECT_EQ(e->host, "127.0.0.1:11434");
  auto o = parseEndpoint("https://api.openai.com/v1");
  ASSERT_TRUE(o.ok()) << o.error().message();
  EXPECT_EQ(o->base, "https://api.openai.com/v1");
  EXPECT_EQ(o->host, "api.openai.com");
}

TEST(ParseEndpoint, RefusesWhatIsNotAPlainHttpBase) {
  for (const char* bad : {"", "ftp://h/x", "file:///etc/passwd", "127.0.0.1:8080", "http://", "http://u:pw@h/v1",
                          "http://h/v1?x=1", "http://h/v1#f", "http://h /v1", "http://h/\n", "gopher://h"}) {
    auto e = parseEndpoint(bad);
    ASSERT_FALSE(e.ok()) << "accepted endpoint '" << bad << "'";
    EXPECT_EQ(e.error().code(), kInvalid);
    EXPECT_EQ(e.error().message().find("pw"), std::string::npos) << e.error().message();
  }
}

TEST(HttpSend, PostsBodyAndHeadersAndReturnsTheBody) {
  StubHttpServer s;
  ASSERT_NE(s.port(), 0);
  s.enqueueJson(R"({"ok":true})");
  Secret key("sk-SENTINEL-7c1e");
  HttpRequest r = post(s, "/v1/chat/completions");
  r.headers = {"Content-Type: application/json"};
  r.secret = &key;
  r.secret_header_prefix = "Authorization: Bearer ";
  r.body = R"({"a":1})";
  auto resp = httpSend(r);
  ASSERT_TRUE(resp.ok()) << resp.error().message();
  EXPECT_EQ(resp->status, 200);
  EXPECT_EQ(resp->body, R"({"ok":true})");
  auto reqs = s.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].path, "/v1/chat/completions");
  EXPECT_EQ(reqs[0].body, R"({"a":1})");
  EXPECT_EQ(reqs[0].headers["authorization"], "Bearer sk-SENTINEL-7c1e");
  EXPECT_EQ(reqs[0].headers["content-type"], "application/json");
  EXPECT_EQ(reqs[0].headers.count("expect"), 0u) << "100-continue would cost a round trip";
}

TEST(HttpSend, GetSendsNoBody) {
  StubHttpServer s;
  s.enqueueJson("{}");
  HttpRequest r = post(s, "/api/tags");
  r.method = "GET";
  ASSERT_TRUE(httpSend(r).ok());
  auto reqs = s.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].body, "");
}

struct StatusCase {
  int status;
  int code;
};

TEST(HttpSend, ClassifiesStatusesAndNamesHostAndStatus) {
  for (StatusCase c : {StatusCase{500, kIo}, {502, kIo}, {503, kIo}, {529, kIo}, {429, kIo}, {408, kIo},
                       {400, kRefused}, {401, kRefused}, {403, kRefused}, {404, kRefused}}) {
    StubHttpServer s;
    s.enqueueJson(R"({"error":"body-text-must-not-leak"})", c.status);
    auto resp = httpSend(post(s));
    ASSERT_FALSE(resp.ok()) << "HTTP " << c.status << " accepted";
    EXPECT_EQ(resp.error().code(), c.code) << "HTTP " << c.status << ": " << resp.error().message();
    const std::string m = resp.error().message();
    EXPECT_NE(m.find("HTTP " + std::to_string(c.status)), std::string::npos) << m;
    EXPECT_NE(m.find("127.0.0.1:" + std::to_string(s.port())), std::string::npos) << m;
    EXPECT_EQ(m.find("body-text-must-not-leak"), std::string::npos) << m;
  }
}

TEST(HttpSend, RedirectIsNotFollowed) {
  StubHttpServer s;
  StubHttpServer::Response r;
  r.status = 302;
  r.headers = {"Location: " + s.url("/elsewhere")};
  s.enqueue(r);
  s.enqueueJson("{}");  // what a followed redirect would get
  auto resp = httpSend(post(s));
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.error().code(), kRefused);
  EXPECT_NE(resp.error().message().find("HTTP 302"), std::string::npos) << resp.error().message();
  EXPECT_EQ(s.requests().size(), 1u) << "the redirect to /elsewhere was followed";
}

TEST(HttpSend, ConnectionRefusedIsRetryable) {
  ClosedPort closed;
  ASSERT_NE(closed.port, 0);
  HttpRequest r;
  r.url = "http://127.0.0.1:" + std::to_string(closed.port) + "/x";
  r.host = "127.0.0.1:" + std::to_string(closed.port);
  auto resp = httpSend(r);
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.error().code(), kIo) << resp.error().message();
  EXPECT_NE(resp.error().message().find(r.host), std::string::npos) << resp.error().message();
}

TEST(HttpSend, ServerThatNeverAnswersTimesOutAsRetryable) {
  StubHttpServer s;
  StubHttpServer::Response r;
  r.never_answer = true;
  s.enqueue(r);
  HttpRequest req = post(s);
  req.timeout = std::chrono::milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  auto resp = httpSend(req);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.error().code(), kIo) << resp.error().message();
  EXPECT_LT(took, std::chrono::seconds(5)) << "the 300 ms timeout was not applied";
}

TEST(HttpSend, OversizedResponseIsRefusedWithAndWithoutContentLength) {
  for (bool omit : {false, true}) {
    StubHttpServer s;
    StubHttpServer::Response r;
    r.body = std::string(4096, 'a');
    r.omit_content_length = omit;
    s.enqueue(r);
    HttpRequest req = post(s);
    req.max_response_bytes = 1000;
    auto resp = httpSend(req);
    ASSERT_FALSE(resp.ok()) << "4096-byte body accepted under a 1000-byte cap, omit_content_length=" << omit;
    EXPECT_EQ(resp.error().code(), kInvalid);
    EXPECT_NE(resp.error().message().find("response larger than 1000 bytes"), std::string::npos)
        << resp.error().message();
  }
}

TEST(HttpSend, BodyExactlyAtTheCapIsAccepted) {
  StubHttpServer s;
  StubHttpServer::Response r;
  r.body = std::string(1000, 'a');
  r.omit_content_length = true;
  s.enqueue(r);
  HttpRequest req = post(s);
  req.max_response_bytes = 1000;
  auto resp = httpSend(req);
  ASSERT_TRUE(resp.ok()) << resp.error().message();
  EXPECT_EQ(resp->body.size(), 1000u);
}

// Sets the proxy variables for one scope, pointing them at proxy_url.
struct ProxyEnv {
  explicit ProxyEnv(const std::string& proxy_url) {
    for (const char* v : kVars) ::setenv(v, proxy_url.c_str(), 1);
    ::unsetenv("no_proxy");
    ::unsetenv("NO_PROXY");
  }
  ~ProxyEnv() {
    for (const char* v : kVars) ::unsetenv(v);
  }
  static constexpr const char* kVars[] = {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"};
};

TEST(HttpSend, ProxyEnvironmentIsIgnored) {
  StubHttpServer target;
  StubHttpServer proxy;  // records what a honoured proxy variable would have sent it
  target.enqueueJson("{}");
  ProxyEnv env(proxy.url());
  auto resp = httpSend(post(target));
  ASSERT_TRUE(resp.ok()) << resp.error().message();
  EXPECT_EQ(target.requests().size(), 1u);
  EXPECT_EQ(proxy.requests().size(), 0u) << "the request went through the proxy from the environment";
}

// Control: a plain libcurl handle in the same setup does go through the proxy, so the test
// above can fail.
TEST(HttpSend, ControlPlainCurlHonoursTheProxyEnvironment) {
  StubHttpServer target;
  StubHttpServer proxy;
  proxy.enqueueJson("{}");
  ProxyEnv env(proxy.url());
  CURL* h = curl_easy_init();
  ASSERT_NE(h, nullptr);
  const std::string url = target.url("/x");
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, +[](char*, size_t s, size_t n, void*) { return s * n; });
  CURLcode rc = curl_easy_perform(h);
  curl_easy_cleanup(h);
  EXPECT_EQ(rc, CURLE_OK);
  EXPECT_EQ(proxy.requests().size(), 1u);
  EXPECT_EQ(target.requests().size(), 0u);
}

TEST(HttpSend, SecretWithAControlByteIsRefusedWithoutSendingIt) {
  StubHttpServer s;
  Secret key("sk-SENTINEL-7c1e\r\nX-Injected: 1");
  HttpRequest r = post(s);
  r.secret = &key;
  r.secret_header_prefix = "Authorization: Bearer ";
  auto resp = httpSend(r);
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.error().code(), kInvalid);
  EXPECT_EQ(resp.error().message().find("SENTINEL"), std::string::npos) << resp.error().message();
  EXPECT_EQ(s.requests().size(), 0u);
}

TEST(HttpSend, OtherProtocolsAreRefused) {
  HttpRequest r;
  r.url = "file:///etc/hostname";
  r.host = "file";
  auto resp = httpSend(r);
  ASSERT_FALSE(resp.ok()) << "file:// fetched";
  EXPECT_EQ(resp.error().code(), kRefused) << resp.error().message();
}

}  // namespace
}  // namespace corral::agent
