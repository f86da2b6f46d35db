// SPDX-License-Identifier: Apache-2.0
// The proxy's forward (plain HTTP) path against real clients and a real upstream: grants,
// scoping, canonical forms, rebinding through localhost, and smuggling over raw sockets.
#include "proxy_suite.h"

namespace corral::net::testing {
namespace {

class ProxyForward : public ProxySuite {
 protected:
  // Starts the proxy with grants (PORT in a grant is replaced by the upstream HTTP port).
  uint16_t startProxy(std::vector<std::string> grants, ProxyOptions options = {}) {
    for (auto& g : grants) g = withPorts(g, {{"PORT", up_->http}});
    return startProxyAs("run-fwd", grants, std::move(options));
  }
  std::string hp() const { return std::to_string(up_->http); }
  std::string curl(uint16_t proxy_port, const std::string& url, const std::string& extra = "") {
    return run("curl -sS -i --max-time 20 -x http://127.0.0.1:" + std::to_string(proxy_port) + " " + extra + " '" + url + "'");
  }
};

TEST_F(ProxyForward, GrantedLiteralReachesUpstreamAndEventRecordsIt) {
  uint16_t p = startProxy({"http://127.0.0.1:PORT"});
  int before = upstreamCount(*up_, false);
  std::string out = curl(p, "http://127.0.0.1:" + hp() + "/hello?token=sentinel-7f3a");
  EXPECT_EQ(statusOf(out), 200) << out;
  EXPECT_NE(out.find("upstream ok path=/hello?token=sentinel-7f3a"), std::string::npos) << out;
  EXPECT_EQ(upstreamCount(*up_, false), before + 1);
  auto e = events_.waitFor("allowed");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->tag, "run-fwd");
  EXPECT_EQ(e->kind, "forward");
  EXPECT_EQ(e->method, "GET");
  EXPECT_EQ(e->requested, "127.0.0.1:" + hp());
  EXPECT_EQ(e->destination, "127.0.0.1:" + hp());
  EXPECT_EQ(e->resolved, "127.0.0.1:" + hp());
  EXPECT_EQ(e->decision, "allow");
  EXPECT_EQ(e->status, 200);
  EXPECT_GT(e->bytes_up, 0u);
  EXPECT_GT(e->bytes_down, 0u);
  EXPECT_GT(e->duration_ms, 0.0);
  // No path, query or header value is recorded.
  EXPECT_EQ(e->requested.find("sentinel"), std::string::npos);
}

TEST_F(ProxyForward, UpstreamSeesOriginFormCanonicalHostAndNoProxyHeaders) {
  uint16_t p = startProxy({"http://127.0.0.1:PORT"});
  std::string out = curl(p, "http://2130706433:" + hp() + "/x",
                         "-U user:pw -H 'Proxy-Connection: keep-alive' -H 'Connection: X-Hop' -H 'X-Hop: 1' -H 'X-Keep: 2' -H 'Upgrade: websocket'");
  ASSERT_EQ(statusOf(out), 200) << out;
  std::string head = upstreamLastHead(*up_);
  EXPECT_NE(head.find("GET /x HTTP/1.1"), std::string::npos) << head;
  EXPECT_NE(head.find("Host: 127.0.0.1:" + hp()), std::string::npos) << head;
  EXPECT_NE(head.find("Connection: close"), std::string::npos) << head;
  EXPECT_NE(head.find("X-Keep: 2"), std::string::npos) << head;
  EXPECT_EQ(head.find("Proxy-"), std::string::npos) << head;
  EXPECT_EQ(head.find("X-Hop"), std::string::npos) << head;
  EXPECT_EQ(head.find("Upgrade"), std::string::npos) << head;
}

TEST_F(ProxyForward, PythonUrllibThroughTheProxy) {
  uint16_t p = startProxy({"http://127.0.0.1:PORT"});
  std::string out = run(std::string(CORRAL_PYTHON3) + " " CORRAL_NET_TEST_DIR "/client.py urllib " + std::to_string(p) +
                        " http://127.0.0.1:" + hp() + "/py");
  EXPECT_EQ(out.rfind("200 - upstream ok path=/py", 0), 0u) << out;
  out = run(std::string(CORRAL_PYTHON3) + " " CORRAL_NET_TEST_DIR "/client.py urllib " + std::to_string(p) +
            " http://127.0.0.2:" + hp() + "/py");
  EXPECT_EQ(out.rfind("403 no-grant corral: egress denied: no-grant: ", 0), 0u) << out;
}

struct Refused {
  std::string url;
  int status;
  std::string rule;
};

TEST_F(ProxyForward, RefusalsNameTheirRuleAndNeverReachUpstream) {
  uint16_t p = startProxy({"http://127.0.0.1:PORT", "https://127.0.0.3:PORT"});
  const Refused cases[] = {
      {"http://127.0.0.1:1/", 403, "port-mismatch"},
      {"http://127.0.0.2:" + hp() + "/", 403, "no-grant"},
      {"http://127.0.0.3:" + hp() + "/", 403, "scheme-mismatch"},
  };
  int before = upstreamCount(*up_, false);
  for (const Refused& c : cases) {
    std::string out = curl(p, c.url);
    EXPECT_EQ(statusOf(out), c.status) << c.url << "\n" << out;
    EXPECT_EQ(deniedOf(out), c.rule) << c.url << "\n" << out;
    EXPECT_NE(out.find("corral: egress denied: " + c.rule + ": "), std::string::npos) << out;
    EXPECT_NE(out.find("Connection: close"), std::string::npos) << out;
    EXPECT_TRUE(events_.waitFor(c.rule)) << c.rule;
  }
  EXPECT_EQ(upstreamCount(*up_, false), before) << "a refused request reached the upstream";
}

// Rebinding: a granted *name* that resolves to loopback is refused after DNS (the real
// resolver: localhost is 127.0.0.1 here), while the granted literal is dialled.
TEST_F(ProxyForward, GrantedLocalhostNameIsRefusedAsPrivateAddress) {
  uint16_t p = startProxy({"http://localhost:PORT"});
  int before = upstreamCount(*up_, false);
  std::string out = curl(p, "http://localhost:" + hp() + "/");
  EXPECT_EQ(statusOf(out), 403) << out;
  EXPECT_EQ(deniedOf(out), "private-address") << out;
  EXPECT_NE(out.find("loopback"), std::string::npos) << out;
  EXPECT_EQ(upstreamCount(*up_, false), before);
  auto e = events_.waitFor("private-address");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->destination, "localhost:" + hp());
  EXPECT_EQ(e->resolved, "") << "nothing was dialled";
}

TEST_F(ProxyForward, InjectedResolverAnswerIsVettedAsAWhole) {
  ProxyOptions o;
  o.resolve = [](const std::string& host) -> Result<std::vector<policy::egress::IpAddress>> {
    if (host == "mixed.example") return std::vector{policy::egress::ipv4(8, 8, 8, 8), policy::egress::ipv4(10, 0, 0, 1)};
    if (host == "meta.example") return std::vector{policy::egress::ipv4(169, 254, 169, 254)};
    return std::vector<policy::egress::IpAddress>{};
  };
  uint16_t p = startProxy({"http://mixed.example", "http://meta.example", "http://none.example"}, o);
  EXPECT_EQ(deniedOf(curl(p, "http://mixed.example/")), "private-address");
  EXPECT_EQ(deniedOf(curl(p, "http://meta.example/")), "private-address");
  std::string out = curl(p, "http://none.example/");
  EXPECT_EQ(statusOf(out), 502) << out;
  EXPECT_EQ(deniedOf(out), "no-address") << out;
}

// Canonical forms of the granted literal are the same destination, over a raw socket so the
// client does not normalise them first. Each is decided, dialled and counted.
TEST_F(ProxyForward, Ipv4AndIpv6FormsOfTheGrantedLiteralAreAllowed) {
  uint16_t p = startProxy({"http://127.0.0.1:PORT"});
  const std::string forms[] = {"2130706433", "0x7f000001", "0177.0.0.1", "127.1", "0x7f.0.0.1", "127.0.0.1.", "[::ffff:127.0.0.1]"};
  for (const std::string& f : forms) {
    int before = upstreamCount(*up_, false);
    std::string auth = f + ":" + hp();
    RawReply r = rawExchange(p, "GET HTTP://" + auth + "/f HTTP/1.1\r\nHost: " + auth + "\r\n\r\n");
    EXPECT_EQ(statusOf(r.bytes), 200) << f << "\n" << r.bytes;
    EXPECT_EQ(upstreamCount(*up_, false), before + 1) << f;
  }
}

TEST_F(ProxyForward, MalformedTargetsAndHostHeadersAre400) {
  uint16_t p = startProxy({"http://127.0.0.1:PORT"});
  const std::string a = "127.0.0.1:" + hp();
  const std::pair<std::string, std::string> cases[] = {
      {"GET /origin-form HTTP/1.1\r\nHost: " + a + "\r\n\r\n", "bad-target"},
      {"GET http://evil@" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\n\r\n", "bad-target"},
      {"GET https://" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\n\r\n", "bad-target"},
      {"GET http://127.0.0.1%2e:" + hp() + "/ HTTP/1.1\r\nHost: " + a + "\r\n\r\n", "bad-host"},
      {"GET http://127.0.0.1:0" + hp() + "/ HTTP/1.1\r\nHost: " + a + "\r\n\r\n", "bad-port"},
      {"GET http://" + a + "/ HTTP/1.1\r\nHost: evil.example\r\n\r\n", "host-header-mismatch"},
      {"GET http://" + a + "/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "host-header-mismatch"},
      {"GET http://" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\nHost: " + a + "\r\n\r\n", "host-header-duplicate"},
      {"GET http://" + a + "/ HTTP/1.1\r\n\r\n", "host-header-missing"},
  };
  int before = upstreamCount(*up_, false);
  for (const auto& [req, rule] : cases) {
    RawReply r = rawExchange(p, req);
    EXPECT_EQ(statusOf(r.bytes), 400) << req << "\n" << r.bytes;
    EXPECT_EQ(deniedOf(r.bytes), rule) << req;
    EXPECT_TRUE(r.closed) << req;
  }
  EXPECT_EQ(upstreamCount(*up_, false), before);
  // HTTP/1.0 may omit Host: the control for host-header-missing.
  EXPECT_EQ(statusOf(rawExchange(p, "GET http://" + a + "/ HTTP/1.0\r\n\r\n").bytes), 200);
}

TEST_F(ProxyForward, SmugglingAttemptsGet400AndTheConnectionIsClosed) {
  uint16_t p = startProxy({"http://127.0.0.1:PORT"});
  const std::string start = "POST http://127.0.0.1:" + hp() + "/s HTTP/1.1\r\nHost: 127.0.0.1:" + hp() + "\r\n";
  const std::pair<std::string, std::string> cases[] = {
      {start + "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "content-length-and-transfer-encoding"},
      {start + "Content-Length: 4\r\nContent-Length: 5\r\n\r\nabcde", "content-length-duplicate"},
      {start + "Content-Length: 4 \r\nContent-Length: 4\r\n\r\nabcd", "content-length-duplicate"},
      {start + "Content-Length: -1\r\n\r\n", "content-length-malformed"},
      {start + "Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", "transfer-encoding-unsupported"},
      {start + "X-A: 1\r\n Transfer-Encoding: chunked\r\n\r\n", "obs-fold"},
      {start + "X-A: 1\rTransfer-Encoding: chunked\r\n\r\n", "bare-cr"},
      {start + "X-Big: " + std::string(64 * 1024, 'a') + "\r\n\r\n", "headers-too-large"},
      {"GET http://127.0.0.1:" + hp() + "/" + std::string(9 * 1024, 'a') + " HTTP/1.1\r\n\r\n", "request-line-too-long"},
      {start + "Transfer-Encoding: chunked\r\n\r\n5\r\nabcdefgh\r\n0\r\n\r\n", "chunked-malformed"},
      {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "http2-preface"},
  };
  int before = upstreamCount(*up_, false);
  for (const auto& [req, rule] : cases) {
    RawReply r = rawExchange(p, req);
    EXPECT_EQ(statusOf(r.bytes), 400) << rule << "\n" << r.bytes.substr(0, 300);
    EXPECT_EQ(deniedOf(r.bytes), rule);
    EXPECT_TRUE(r.closed) << rule << ": the connection stayed open";
  }
  EXPECT_EQ(upstreamCount(*up_, false), before) << "a smuggling attempt reached the upstream";
}

TEST_F(ProxyForward, BodiesAreForwardedExactlyAndPipelinedRequestsAreNot) {
  uint16_t p = startProxy({"http://127.0.0.1:PORT"});
  const std::string a = "127.0.0.1:" + hp();
  int before = upstreamCount(*up_, false);
  // A second request pipelined after the body is never forwarded (one request per connection).
  RawReply r = rawExchange(p, "POST http://" + a + "/cl HTTP/1.1\r\nHost: " + a + "\r\nContent-Length: 5\r\n\r\nhello" +
                                  "GET http://" + a + "/second HTTP/1.1\r\nHost: " + a + "\r\n\r\n");
  EXPECT_NE(r.bytes.find("path=/cl body=5"), std::string::npos) << r.bytes;
  EXPECT_EQ(r.bytes.find("/second"), std::string::npos) << r.bytes;
  r = rawExchange(p, "POST http://" + a + "/ch HTTP/1.1\r\nHost: " + a + "\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n");
  EXPECT_NE(r.bytes.find("path=/ch body=5"), std::string::npos) << r.bytes;
  EXPECT_EQ(upstreamCount(*up_, false), before + 2);
  // A large body through curl (chunked by curl when read from stdin).
  std::string out = run("head -c 3000000 /dev/zero | curl -sS --max-time 20 -x http://127.0.0.1:" + std::to_string(p) +
                        " -H 'Transfer-Encoding: chunked' --data-binary @- http://" + a + "/big");
  EXPECT_NE(out.find("path=/big body=3000000"), std::string::npos) << out;
}

TEST_F(ProxyForward, UnreachableUpstreamIs502) {
  uint16_t p = startProxy({"http://127.0.0.1:1"});
  std::string out = curl(p, "http://127.0.0.1:1/");
  EXPECT_EQ(statusOf(out), 502) << out;
  EXPECT_EQ(deniedOf(out), "upstream-unreachable") << out;
}

TEST_F(ProxyForward, SlowHeadGets408) {
  ProxyOptions o;
  o.header_timeout = std::chrono::milliseconds(300);
  uint16_t p = startProxy({"http://127.0.0.1:PORT"}, o);
  RawReply r = rawExchange(p, "GET http://127.0.0.1:" + hp() + "/ HTTP/1.1\r\nHost: 127");  // never finished
  EXPECT_EQ(statusOf(r.bytes), 408) << r.bytes;
  EXPECT_EQ(deniedOf(r.bytes), "header-timeout");
  EXPECT_TRUE(r.closed);
}

}  // namespace
}  // namespace corral::net::testing
