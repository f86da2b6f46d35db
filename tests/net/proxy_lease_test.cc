// SPDX-License-Identifier: Apache-2.0
// Credential leases through the proxy, against real clients (curl, python3 urllib) and real
// HTTP and HTTPS upstreams with a test CA: broker mode, placeholder mode, redaction, limits,
// verification failures, and a sentinel secret that must appear in no log line or event.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "audit/sha256.h"
#include "base/log.h"
#include "net/lease_broker.h"
#include "proxy_suite.h"

namespace corral::net::testing {
namespace {

// Needs URL-encoding ('/', '+', '=', ':') so the encoded forms differ from the raw one.
constexpr std::string_view kSecret = "sk/sentinel+7f3a=SECRET:0123456789abcdef";

struct LeaseUpstreams {
  Helper helper;
  uint16_t http = 0, http2 = 0, https = 0, https_bad = 0;
};

std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class ProxyLease : public ProxySuite {
 protected:
  static void SetUpTestSuite() {
    ProxySuite::SetUpTestSuite();
    if (!up_) return;
    const std::string d = up_->dir;
    // A certificate from the same CA that names only another host.
    if (!issueCert(d, "bad", "other.test", "DNS:other.test")) {
      skip_ = "openssl could not make the mismatched certificate";
      return;
    }
    std::string why;
    auto h = startHelper("lease_upstream.py", {d + "/server.pem", d + "/server.key", d + "/bad.pem", d + "/bad.key"},
                         {"LEASE_SECRET=" + std::string(kSecret)}, &why);
    if (!h) {
      skip_ = "lease_upstream.py did not start: " + why;
      return;
    }
    lu_.helper = std::move(*h);
    lu_.http = portOf(lu_.helper, "http");
    lu_.http2 = portOf(lu_.helper, "http2");
    lu_.https = portOf(lu_.helper, "https");
    lu_.https_bad = portOf(lu_.helper, "https_bad");
    if (!lu_.http || !lu_.https || !lu_.https_bad || !lu_.http2) skip_ = "lease_upstream.py did not start: " + lu_.helper.ports;
    // Every log line of the suite goes to a file that TearDown searches for the secret.
    log_path_ = d + "/proxy.log";
    saved_stderr_ = ::dup(2);
    int lf = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    ::dup2(lf, 2);
    ::close(lf);
    log::setLevel(log::Level::kDebug);
  }
  static void TearDownTestSuite() {
    if (saved_stderr_ >= 0) {
      ::dup2(saved_stderr_, 2);
      ::close(saved_stderr_);
      saved_stderr_ = -1;
    }
    stopHelper(lu_.helper);
    lu_ = {};
    ProxySuite::TearDownTestSuite();
  }
  void TearDown() override {
    ProxySuite::TearDown();  // every event is reported by now
    if (!up_ || !skip_.empty()) return;
    const std::string logs = readFile(log_path_);
    // Control: the capture works, so the searches below can fail.
    EXPECT_NE(logs.find("event=egress"), std::string::npos) << "no log line was captured";
    EXPECT_EQ(logs.find(kSecret), std::string::npos) << "leases.secret-not-logged: the sentinel is in a log line";
    EXPECT_EQ(logs.find("sk%2Fsentinel"), std::string::npos) << "the URL-encoded sentinel is in a log line";
    for (const LeaseEvent& e : leaseEvents()) {
      std::string all = e.tag + e.lease + e.mode + e.method + e.host + e.path_sha256 + e.decision + e.rule + e.refused;
      for (const auto& s : e.suspects) all += s.place + s.header;
      EXPECT_EQ(all.find("sentinel"), std::string::npos) << "a lease event holds the sentinel";
      EXPECT_EQ(all.find("corral-lease-"), std::string::npos) << "a lease event holds a placeholder";
    }
    for (const ConnectionEvent& e : events_.all()) {
      std::string all = e.tag + e.kind + e.method + e.requested + e.destination + e.resolved + e.rule + e.lease;
      EXPECT_EQ(all.find("sentinel"), std::string::npos) << "a connection event holds the sentinel";
    }
  }

  // Leases from --credential texts (PORT_HTTP, PORT_HTTPS, PORT_BAD replaced); grants as in
  // the forward tests. Returns the proxy port; self_authority is 127.0.0.1:<it>.
  uint16_t startProxy(std::vector<std::string> credentials, std::vector<std::string> grants = {}) {
    auto subst = [](const std::string& s) {
      return withPorts(s, {{"PORT_HTTP2", lu_.http2}, {"PORT_HTTPS", lu_.https}, {"PORT_HTTP", lu_.http}, {"PORT_BAD", lu_.https_bad}});
    };
    std::vector<LeaseSpec> specs;
    for (auto& c : credentials) {
      auto spec = parseCredentialFlag(subst(c));
      EXPECT_TRUE(spec.ok()) << spec.error().message();
      specs.push_back(*spec);
    }
    TlsOptions tls;
    tls.ca_bundle_path = up_->cafile;
    tls.io_timeout = std::chrono::milliseconds(10000);
    auto broker = LeaseBroker::create(specs, [](std::string_view name) -> std::optional<std::string> {
      if (name == "API_TOKEN" || name == "LOCAL_TOKEN") return std::string(kSecret);
      return std::nullopt;
    }, tls);
    EXPECT_TRUE(broker.ok()) << broker.error().message();
    broker_ = *broker;
    ProxyOptions options;
    options.on_lease_event = [this](const LeaseEvent& e) {
      std::lock_guard<std::mutex> l(mu_);
      lease_events_.push_back(e);
    };
    startServer(std::move(options));
    auto parsed = policy::egress::parseGrants([&] {
      std::vector<std::string> g;
      for (auto& x : grants) g.push_back(subst(x));
      return g;
    }());
    EXPECT_TRUE(parsed.ok());
    auto policy = std::make_shared<ClientPolicy>();
    policy->tag = "run-lease";
    policy->grants = *parsed;
    policy->leases = broker_;
    // self_authority must be known before listen(): a port is picked by binding port 0 and
    // letting it go (the proxy sets SO_REUSEADDR).
    uint16_t want = 0;
    {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      socklen_t len = sizeof a;
      if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
          ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
        want = ntohs(a.sin_port);
      ::close(fd);
    }
    policy->self_authority = "127.0.0.1:" + std::to_string(want);
    auto port = proxy_->listen("127.0.0.1", want, policy);
    EXPECT_TRUE(port.ok());
    return port.ok() ? *port : 0;
  }
  std::vector<LeaseEvent> leaseEvents() {
    std::lock_guard<std::mutex> l(mu_);
    return lease_events_;
  }
  std::optional<LeaseEvent> waitLease(size_t index) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> l(mu_);
        if (lease_events_.size() > index) return lease_events_[index];
      }
      usleep(10000);
    }
    return std::nullopt;
  }
  std::string curl(const std::string& args) { return run("curl -sS -i --max-time 20 " + args); }
  std::string direct(uint16_t proxy_port, const std::string& path) {
    return "'http://127.0.0.1:" + std::to_string(proxy_port) + path + "'";
  }
  int count(uint16_t port, bool tls) {
    std::string scheme = tls ? "https" : "http";
    std::string out = run("curl -s --max-time 10 " + std::string(tls ? "-k " : "") + scheme + "://127.0.0.1:" +
                          std::to_string(port) + "/__count");
    return std::atoi(out.c_str());
  }
  static std::string bodyOf(const std::string& r) {
    size_t at = r.rfind("\r\n\r\n");
    return at == std::string::npos ? r : r.substr(at + 4);
  }
  std::string placeholder(const std::string& lease) { return broker_->find(lease)->placeholder(); }

  static inline LeaseUpstreams lu_;
  static inline std::string log_path_;
  static inline int saved_stderr_ = -1;
  std::shared_ptr<LeaseBroker> broker_;
  std::mutex mu_;
  std::vector<LeaseEvent> lease_events_;
};

const std::string kApi = "api=API_TOKEN@https://127.0.0.1:PORT_HTTPS";

TEST_F(ProxyLease, BrokerGetInjectsTheCredentialOverVerifiedTls) {
  uint16_t p = startProxy({kApi});
  std::string out = curl(direct(p, "/lease/api/plain?q=1"));
  EXPECT_EQ(statusOf(out), 200) << out;
  EXPECT_NE(out.find("ok auth=secret n=1 ae=identity path=/plain?q=1 method=GET"), std::string::npos) << out;
  EXPECT_NE(out.find("Transfer-Encoding: chunked"), std::string::npos) << "re-framed as chunked: " << out;
  EXPECT_EQ(out.find("Content-Length"), std::string::npos) << out;
  auto le = waitLease(0);
  ASSERT_TRUE(le);
  EXPECT_EQ(le->tag, "run-lease");
  EXPECT_EQ(le->lease, "api");
  EXPECT_EQ(le->mode, "broker");
  EXPECT_EQ(le->method, "GET");
  EXPECT_EQ(le->host, "127.0.0.1");
  EXPECT_EQ(le->port, lu_.https);
  EXPECT_EQ(le->path_sha256, audit::sha256Hex("/plain?q=1"));
  EXPECT_EQ(le->status, 200);
  EXPECT_EQ(le->decision, "allow");
  EXPECT_EQ(le->rule, "allowed");
  EXPECT_GT(le->bytes_up, 0u);
  EXPECT_GT(le->bytes_down, 0u);
  auto e = events_.waitFor("allowed");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, "lease");
  EXPECT_EQ(e->lease, "api");
  EXPECT_EQ(e->resolved, "127.0.0.1:" + std::to_string(lu_.https));
  EXPECT_EQ(broker_->usage("api").requests, 1u);
}

TEST_F(ProxyLease, AbsoluteFormThroughHttpProxyAndLocalhostSpellingWork) {
  uint16_t p = startProxy({kApi});
  const std::string ps = std::to_string(p);
  std::string out = curl("-x http://127.0.0.1:" + ps + " " + direct(p, "/lease/api/abs"));
  EXPECT_NE(out.find("ok auth=secret n=1 ae=identity path=/abs "), std::string::npos) << out;
  out = curl("-x http://127.0.0.1:" + ps + " 'http://localhost:" + ps + "/lease/api/lh'");
  EXPECT_NE(out.find("ok auth=secret n=1 ae=identity path=/lh "), std::string::npos) << out;
  out = run(std::string(CORRAL_PYTHON3) + " " CORRAL_NET_TEST_DIR "/client.py urllib " + ps + " http://127.0.0.1:" + ps +
            "/lease/api/py");
  EXPECT_EQ(out.rfind("200 - ok auth=secret n=1 ae=identity path=/py ", 0), 0u) << out;
  // Another port on the same address is not the proxy: an ordinary forward request, refused.
  out = curl("-x http://127.0.0.1:" + ps + " 'http://127.0.0.1:1/lease/api/x'");
  EXPECT_EQ(statusOf(out), 403) << out;
}

TEST_F(ProxyLease, BrokerPostStreamsContentLengthAndChunkedBodies) {
  uint16_t p = startProxy({kApi});
  const std::string file = up_->dir + "/body.bin";
  run("head -c 300000 /dev/urandom > " + file);
  const std::string sha = run("sha256sum " + file + " | cut -c1-64").substr(0, 64);
  std::string out = curl("--data-binary @" + file + " " + direct(p, "/lease/api/upload"));
  EXPECT_NE(out.find("method=POST got=300000 sha=" + sha), std::string::npos) << out.substr(0, 400);
  out = curl("-H 'Transfer-Encoding: chunked' --data-binary @" + file + " " + direct(p, "/lease/api/upload"));
  EXPECT_NE(out.find("method=POST got=300000 sha=" + sha), std::string::npos) << out.substr(0, 400);
  // Expect: 100-continue is answered by the proxy, and never sent upstream.
  out = curl("-H 'Expect: 100-continue' --data-binary @" + file + " " + direct(p, "/lease/api/upload"));
  EXPECT_NE(out.find("HTTP/1.1 100 Continue"), std::string::npos) << out.substr(0, 400);
  EXPECT_NE(out.find("auth=secret n=1 ae=identity path=/upload method=POST got=300000 sha=" + sha), std::string::npos);
}

// An empty body (Content-Length: 0) is a complete request: it is sent at once, not after
// the proxy's idle timeout (curl gives up after 20 s, long before it). The control is the
// same POST with one byte.
TEST_F(ProxyLease, BrokerPostWithAnEmptyBodyIsAnsweredAtOnce) {
  uint16_t p = startProxy({kApi});
  std::string out = curl("--data-binary x " + direct(p, "/lease/api/upload"));
  EXPECT_NE(out.find("method=POST got=1 "), std::string::npos) << "control: " << out.substr(0, 400);
  out = curl("-H 'Content-Length: 0' -X POST " + direct(p, "/lease/api/upload"));
  EXPECT_NE(out.find("method=POST got=0 "), std::string::npos) << out.substr(0, 400);
  out = curl("--data-binary '' " + direct(p, "/lease/api/upload"));
  EXPECT_NE(out.find("method=POST got=0 "), std::string::npos) << out.substr(0, 400);
}

TEST_F(ProxyLease, ClientSuppliedLeaseHeaderIsReplacedNotForwarded) {
  uint16_t p = startProxy({kApi});
  std::string out = curl("-H 'Authorization: Bearer forged' -H 'authorization: second' " + direct(p, "/lease/api/h"));
  EXPECT_NE(out.find("ok auth=secret n=1 "), std::string::npos) << out;
  out = curl("-H 'Accept-Encoding: gzip' " + direct(p, "/lease/api/h"));
  EXPECT_NE(out.find("ae=identity"), std::string::npos) << out;
}

TEST_F(ProxyLease, EchoedSecretIsRedactedAcrossChunkBoundariesInEveryEncoding) {
  uint16_t p = startProxy({kApi});
  for (const std::string path : {"/lease/api/echo-secret", "/lease/api/echo-secret-cl"}) {
    std::string out = curl(direct(p, path));
    ASSERT_EQ(statusOf(out), 200) << out;
    EXPECT_EQ(out.find(kSecret), std::string::npos) << "leases.response-redacted: raw secret in " << out;
    EXPECT_EQ(out.find("c2svc2VudGluZWwrN2YzYT1TRUNSRVQ6MDEyMzQ1Njc4OWFiY2RlZg"), std::string::npos) << "base64: " << out;
    EXPECT_EQ(out.find("sk%2Fsentinel%2B7f3a%3DSECRET%3A0123456789abcdef"), std::string::npos) << "url-encoded: " << out;
    // curl de-chunks the body: the visible text keeps its structure around the markers.
    EXPECT_NE(out.find("raw=[REDACTED:api] b64="), std::string::npos) << out;
    EXPECT_NE(out.find("url=[REDACTED:api] end"), std::string::npos) << out;
    EXPECT_NE(out.find("X-Echo: [REDACTED:api]"), std::string::npos) << out;
  }
  auto le = waitLease(1);
  ASSERT_TRUE(le);
  EXPECT_GE(le->redactions, 4u);
}

TEST_F(ProxyLease, HttpOneZeroClientGetsACloseDelimitedRedactedBody) {
  uint16_t p = startProxy({kApi});
  RawReply r = rawExchange(p, "GET /lease/api/echo-secret HTTP/1.0\r\n\r\n");
  EXPECT_EQ(statusOf(r.bytes), 200) << r.bytes;
  EXPECT_EQ(r.bytes.find("chunked"), std::string::npos) << r.bytes;
  EXPECT_EQ(r.bytes.find(kSecret), std::string::npos) << r.bytes;
  EXPECT_NE(r.bytes.find("\r\n\r\nraw=[REDACTED:api] b64="), std::string::npos) << r.bytes;
  EXPECT_TRUE(r.closed);
}

TEST_F(ProxyLease, UnknownLeaseIs404AndReachesNothing) {
  uint16_t p = startProxy({kApi});
  int before = count(lu_.https, true);
  std::string out = curl(direct(p, "/lease/nope/x"));
  EXPECT_EQ(statusOf(out), 404) << out;
  EXPECT_EQ(deniedOf(out), "lease-unknown") << out;
  EXPECT_NE(out.find("lease 'nope' does not exist"), std::string::npos) << out;
  EXPECT_EQ(count(lu_.https, true), before);
  auto le = waitLease(0);
  ASSERT_TRUE(le);
  EXPECT_EQ(le->rule, "lease-unknown");
  EXPECT_EQ(le->decision, "refuse");
}

TEST_F(ProxyLease, RequestBudgetAndRateLimitAnswer429WithTheReason) {
  uint16_t p = startProxy({kApi + ";max_requests=2", "slow=LOCAL_TOKEN@http://127.0.0.1:PORT_HTTP;rate=1;burst=1"});
  EXPECT_EQ(statusOf(curl(direct(p, "/lease/api/1"))), 200);
  EXPECT_EQ(statusOf(curl(direct(p, "/lease/api/2"))), 200);
  int before = count(lu_.https, true);
  std::string out = curl(direct(p, "/lease/api/3"));
  EXPECT_EQ(statusOf(out), 429) << out;
  EXPECT_EQ(deniedOf(out), "lease-limit");
  EXPECT_NE(out.find("lease 'api': request budget of 2 requests used up"), std::string::npos) << out;
  EXPECT_EQ(count(lu_.https, true), before);

  // One curl, four requests back to back: with one token a second, a loaded machine can
  // still space two processes a second apart, but not four requests of one process.
  out = curl(direct(p, "/lease/slow/a") + " " + direct(p, "/lease/slow/b") + " " + direct(p, "/lease/slow/c") + " " +
             direct(p, "/lease/slow/d"));
  EXPECT_NE(out.find("ok auth=secret"), std::string::npos) << "plain-http lease: " << out;
  EXPECT_NE(out.find("HTTP/1.1 429"), std::string::npos) << out;
  EXPECT_NE(out.find("rate limit of 1 requests/s (burst 1) exceeded"), std::string::npos) << out;
  bool found = false;
  for (const LeaseEvent& e : leaseEvents())
    if (e.rule == "lease-limit" && e.lease == "slow") found = e.refused.find("rate limit") != std::string::npos;
  EXPECT_TRUE(found) << "the 429 reason is in the lease event";
}

TEST_F(ProxyLease, ByteBudgetCutsTheStreamThenRefusesWith429) {
  uint16_t p = startProxy({kApi + ";max_bytes=4k"});
  std::string out = curl(direct(p, "/lease/api/big?n=200000"));
  // Either refused before the first byte or cut mid-body; never the whole body.
  EXPECT_LT(out.size(), 200000u) << "leases.byte-budget: the whole body went through";
  // curl's error line comes before the response (stderr is unbuffered).
  if (out.find("HTTP/1.1 429") == std::string::npos) {
    EXPECT_NE(out.find("HTTP/1.1 200"), std::string::npos) << out.substr(0, 300);
    EXPECT_NE(out.find("curl: (18)"), std::string::npos) << "a cut chunked body is visible to the client: " << out.substr(0, 300);
  }
  out = curl(direct(p, "/lease/api/plain"));
  EXPECT_EQ(statusOf(out), 429) << out;
  EXPECT_NE(out.find("byte budget of 4096 bytes used up"), std::string::npos) << out;
}

TEST_F(ProxyLease, CertificateNotMatchingIs502AndNothingIsSent) {
  uint16_t p = startProxy({"bad=API_TOKEN@https://127.0.0.1:PORT_BAD"});
  int before = count(lu_.https_bad, true);
  std::string out = curl(direct(p, "/lease/bad/x"));
  EXPECT_EQ(statusOf(out), 502) << out;
  EXPECT_EQ(deniedOf(out), "lease-tls-refused") << out;
  EXPECT_NE(out.find("certificate refused"), std::string::npos) << out;
  EXPECT_EQ(count(lu_.https_bad, true), before) << "leases.tls-verified: a request reached an unverified upstream";
}

TEST_F(ProxyLease, NameGrantResolvingToLoopbackIsRefusedLikeAnyGrant) {
  uint16_t p = startProxy({"lh=API_TOKEN@https://localhost:PORT_HTTPS"});
  std::string out = curl(direct(p, "/lease/lh/x"));
  EXPECT_EQ(statusOf(out), 403) << out;
  EXPECT_EQ(deniedOf(out), "private-address") << out;
}

TEST_F(ProxyLease, CompressedResponseIsRefusedNotPassedUnredacted) {
  uint16_t p = startProxy({kApi});
  std::string out = curl(direct(p, "/lease/api/gzip"));
  EXPECT_EQ(statusOf(out), 502) << out;
  EXPECT_EQ(deniedOf(out), "lease-response-encoded") << out;
}

const std::string kLocal = "local=LOCAL_TOKEN@http://127.0.0.1:PORT_HTTP";

TEST_F(ProxyLease, PlaceholderIsSwappedTowardItsOwnDestinationAndTheResponseRedacted) {
  uint16_t p = startProxy({kLocal}, {"http://127.0.0.1:PORT_HTTP", "http://127.0.0.1:PORT_HTTP2"});
  const std::string ph = placeholder("local");
  const std::string proxy = "-x http://127.0.0.1:" + std::to_string(p) + " ";
  std::string out = curl(proxy + "-H 'Authorization: Bearer " + ph + "' http://127.0.0.1:" + std::to_string(lu_.http) + "/own");
  EXPECT_NE(out.find("ok auth=secret n=1 ae=identity path=/own"), std::string::npos) << out;
  out = curl(proxy + "-H 'Authorization: Bearer " + ph + "' http://127.0.0.1:" + std::to_string(lu_.http) + "/echo-secret");
  EXPECT_EQ(out.find(kSecret), std::string::npos) << out;
  EXPECT_NE(out.find("raw=[REDACTED:local] b64="), std::string::npos) << out;
  auto le = waitLease(1);
  ASSERT_TRUE(le);
  EXPECT_EQ(le->mode, "placeholder");
  EXPECT_EQ(le->lease, "local");
  EXPECT_GE(le->redactions, 3u);
  EXPECT_TRUE(le->suspects.empty());
}

TEST_F(ProxyLease, PlaceholderTowardAnotherGrantedHostPassesUntouchedAsSuspect) {
  uint16_t p = startProxy({kLocal}, {"http://127.0.0.1:PORT_HTTP", "http://127.0.0.1:PORT_HTTP2"});
  const std::string ph = placeholder("local");
  std::string out = curl("-x http://127.0.0.1:" + std::to_string(p) + " -H 'Authorization: Bearer " + ph +
                         "' http://127.0.0.1:" + std::to_string(lu_.http2) + "/other");
  EXPECT_NE(out.find("ok auth=placeholder n=1"), std::string::npos) << "leases.placeholder-scoped: " << out;
  auto le = waitLease(0);
  ASSERT_TRUE(le);
  EXPECT_EQ(le->rule, "lease-suspect");
  ASSERT_EQ(le->suspects.size(), 1u);
  EXPECT_EQ(le->suspects[0].place, "header-other-destination");
  EXPECT_EQ(le->suspects[0].header, "Authorization");
  auto e = events_.waitFor("allowed");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->suspects, 1u);
  EXPECT_EQ(e->lease, "local");
  EXPECT_NE(readFile(log_path_).find("event=lease_placeholder_suspect tag=run-lease lease=local place=header-other-destination"),
            std::string::npos);
}

TEST_F(ProxyLease, PlaceholderInUrlOrBodyIsReportedNeverSwapped) {
  uint16_t p = startProxy({kLocal}, {"http://127.0.0.1:PORT_HTTP"});
  const std::string ph = placeholder("local");
  std::string out = curl("-x http://127.0.0.1:" + std::to_string(p) + " --data-binary 'x=" + ph + "' 'http://127.0.0.1:" +
                         std::to_string(lu_.http) + "/q?k=" + ph + "'");
  EXPECT_NE(out.find("ok auth=none"), std::string::npos) << out;
  auto le = waitLease(0);
  ASSERT_TRUE(le);
  std::set<std::string> places;
  for (const auto& s : le->suspects) places.insert(s.place);
  EXPECT_TRUE(places.count("target")) << "placeholder in the URL not reported";
  EXPECT_TRUE(places.count("body")) << "placeholder in the body not reported";
}

}  // namespace
}  // namespace corral::net::testing
