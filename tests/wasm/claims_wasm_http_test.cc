// SPDX-License-Identifier: Apache-2.0
// corral_http claims (claims/wasm.toml: wasm.http-*): a guest's requests go through the run's
// egress proxy and reach exactly what --allow grants, by scheme, host and port; private
// addresses only as granted IP literals; leases injected by the proxy, never seen by the guest.
// The upstream is tests/wasm/http_upstream.py on 127.0.0.1 (main and other port); the guest is
// the example client examples/wasm/http_client.c (exit 3: refused by the proxy; 4: another
// corral_http error, printed as "corral_http error N").
#include <random>
#include <string>
#include <vector>

#include "egress_fixture.h"
#include "wasm_fixture.h"

namespace corral::testing::wasm {
namespace {

using Args = std::vector<std::string>;

Args grant(const std::string& url) { return {"--allow", url}; }

RunResult fetch(Args opts, const Args& client_args) {
  const std::string guest = guestModule("http_client.wasm");
  opts.insert(opts.end(), {"--timeout", "30s"});
  return runWasm(opts, guest, client_args);
}

// The proxy refused: the guest saw NOTCAPABLE (exit 3), corral logged the refusal, the report
// holds it, and the upstream was never asked.
::testing::AssertionResult refusedByProxy(const RunResult& r, const HttpUpstream& up, int count_before,
                                          const std::string& rule = "") {
  if (r.exit_code != 3) return ::testing::AssertionFailure() << "expected the guest's exit 3 (refused)" << r.describe();
  if (!hasProxyRefusalLine(r)) return ::testing::AssertionFailure() << "no egress refusal line" << r.describe();
  if (r.err.find("corral: egress denied: " + rule) == std::string::npos)
    return ::testing::AssertionFailure() << "the guest did not get the proxy's refusal (rule '" << rule << "')" << r.describe();
  if (egressDecisions(r) != std::vector<std::string>{"refuse"})
    return ::testing::AssertionFailure() << "the report's egress is not one refusal" << r.describe();
  if (up.count() != count_before) return ::testing::AssertionFailure() << "the upstream was reached";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult reached(const RunResult& r, const std::string& path) {
  if (r.exit_code != 0 || r.out != "upstream ok " + path)
    return ::testing::AssertionFailure() << "expected 'upstream ok " << path << "'" << r.describe();
  if (egressDecisions(r) != std::vector<std::string>{"allow"})
    return ::testing::AssertionFailure() << "the report's egress is not one allowed request" << r.describe();
  return ::testing::AssertionSuccess();
}

#define HTTP_TEST_SETUP(up)                                                      \
  CORRAL_REQUIRE_WASM_GUEST(client_guest_, "http_client.wasm");                  \
  HttpUpstream up;                                                               \
  REQUIRE_UPSTREAM(up)

TEST(WasmHttpGrants, ControlTheGrantedOriginIsReachedThroughTheProxy) {
  HTTP_TEST_SETUP(up);
  RunResult r = fetch(grant("http://127.0.0.1:" + std::to_string(up.main)), {up.url("/granted")});
  EXPECT_TRUE(reached(r, "/granted")) << claim("wasm.http-grants", "a granted request failed");
  EXPECT_EQ(up.count(), 1);
}

TEST(WasmHttpGrants, AnUngrantedHostIsRefused) {
  HTTP_TEST_SETUP(up);
  RunResult r = fetch(grant("http://127.0.0.1:" + std::to_string(up.main)),
                      {"http://upstream.example:" + std::to_string(up.main) + "/x"});
  EXPECT_TRUE(refusedByProxy(r, up, 0, "no-grant")) << claim("wasm.http-grants", "an ungranted host was not refused");
}

TEST(WasmHttpGrants, AnotherPortOfAGrantedHostIsRefused) {
  HTTP_TEST_SETUP(up);
  RunResult r = fetch(grant("http://127.0.0.1:" + std::to_string(up.main)),
                      {"http://127.0.0.1:" + std::to_string(up.other) + "/other-port"});
  EXPECT_TRUE(refusedByProxy(r, up, 0, "port-mismatch")) << claim("wasm.http-grants", "another port of a granted host was reached");
}

TEST(WasmHttpGrants, NothingIsGrantedByDefault) {
  HTTP_TEST_SETUP(up);
  RunResult r = fetch({}, {up.url("/no-grant")});
  EXPECT_TRUE(refusedByProxy(r, up, 0, "no-grant")) << claim("wasm.http-grants", "a request with no grant was not refused");
}

// https:// without a lease: a CONNECT tunnel decided like any grant, with TLS spoken and the
// certificate verified in the guest's process (the proxy sees only the tunnel).
TEST(WasmHttpGrants, HttpsReachesOnlyTheGrantedOriginThroughAVerifiedTunnel) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "http_client.wasm");
  EgressServers s;
  REQUIRE_SERVERS(s);
  RunResult ok = fetch({"--allow", s.httpsUrl(), "--ca", s.cafile()}, {s.httpsUrl() + "/tls"});
  EXPECT_EQ(ok.exit_code, 0) << ok.describe();
  EXPECT_EQ(ok.out, "upstream ok /tls") << ok.describe();
  EXPECT_EQ(egressDecisions(ok), std::vector<std::string>{"allow"}) << ok.describe();
  RunResult refused = fetch({"--ca", s.cafile()}, {s.httpsUrl() + "/tls"});
  EXPECT_EQ(refused.exit_code, 3) << claim("wasm.http-grants", "an ungranted https origin was reached") << refused.describe();
  EXPECT_TRUE(hasProxyRefusalLine(refused)) << refused.describe();
  EXPECT_NE(refused.err.find("corral: egress denied: no-grant"), std::string::npos) << refused.describe();
  // Verified: without the test CA the handshake fails (IO, 29) and no request is sent.
  RunResult unverified = fetch({"--allow", s.httpsUrl()}, {s.httpsUrl() + "/tls"});
  EXPECT_EQ(unverified.exit_code, 4) << unverified.describe();
  EXPECT_NE(unverified.err.find("corral_http error 29"), std::string::npos) << unverified.describe();
  EXPECT_EQ(s.count(true), 1);
}

TEST(WasmHttpGrants, AGrantToAModuleWithoutCorralHttpIsRefused) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "json_transform.wasm");
  EXPECT_TRUE(wasmRefused(runWasm(grant("http://127.0.0.1:1"), guest, {}), "imports nothing from corral_http"));
}

// A name that resolves to loopback is refused after DNS, and loopback spelled any other way is
// not the granted name; granting the literal opens it, under every spelling (the control: the
// aliases do name the upstream, so the refusals above are decisions, not failures to connect).
const char* const kLoopbackSpellings[] = {"127.0.0.1", "127.1", "0x7f.0.0.1", "[::ffff:127.0.0.1]"};

TEST(WasmHttpPrivateRefused, ANameGrantResolvingToLoopbackIsRefused) {
  HTTP_TEST_SETUP(up);
  const std::string port = std::to_string(up.main);
  RunResult r = fetch(grant("http://localhost:" + port), {"http://localhost:" + port + "/by-name"});
  EXPECT_TRUE(refusedByProxy(r, up, 0, "private-address")) << claim("wasm.http-private-refused", "localhost was reached");
}

TEST(WasmHttpPrivateRefused, LoopbackAliasesAreRefusedUnderANameGrant) {
  HTTP_TEST_SETUP(up);
  const std::string port = std::to_string(up.main);
  for (const char* host : kLoopbackSpellings) {
    RunResult r = fetch(grant("http://localhost:" + port), {std::string("http://") + host + ":" + port + "/alias"});
    EXPECT_TRUE(refusedByProxy(r, up, 0)) << claim("wasm.http-private-refused", std::string("reached ") + host);
  }
}

TEST(WasmHttpPrivateRefused, ControlEveryAliasReachesTheUpstreamUnderALiteralGrant) {
  HTTP_TEST_SETUP(up);
  const std::string port = std::to_string(up.main);
  int n = 0;
  for (const char* host : kLoopbackSpellings) {
    RunResult r = fetch(grant("http://127.0.0.1:" + port), {std::string("http://") + host + ":" + port + "/alias"});
    EXPECT_TRUE(reached(r, "/alias")) << host;
    EXPECT_EQ(up.count(), ++n) << host;
  }
}

// The head is the host's: Host, framing and hop-by-hop headers, and anything that would end a
// header line early, are refused in the guest (INVAL, 28) before a byte reaches the proxy.
TEST(WasmHttpHeadOwned, AGuestCannotSetHostFramingOrASecondRequestLine) {
  HTTP_TEST_SETUP(up);
  const std::string other = "127.0.0.1:" + std::to_string(up.other);
  const Args bad_headers[] = {{"-H", "Host: " + other},
                              {"-H", "Content-Length: 0"},
                              {"-H", "Transfer-Encoding: chunked"},
                              {"-H", "Connection: keep-alive"},
                              {"-H", "X-A: 1\r\nGET http://" + other + "/smuggled HTTP/1.1"},
                              {"-H", "X-A: 1\rHost: " + other},
                              {"-H", "Bad Name: 1"}};
  for (const Args& h : bad_headers) {
    Args a = h;
    a.push_back(up.url("/head"));
    RunResult r = fetch(grant("http://127.0.0.1:" + std::to_string(up.main)), a);
    EXPECT_EQ(r.exit_code, 4) << claim("wasm.http-head-owned", "accepted header " + h[1]) << r.describe();
    EXPECT_NE(r.err.find("corral_http error 28"), std::string::npos) << r.describe();
    EXPECT_TRUE(egressDecisions(r).empty()) << "a request reached the proxy" << r.describe();
  }
  EXPECT_EQ(up.count(), 0);
}

TEST(WasmHttpHeadOwned, ControlAnOrdinaryHeaderReachesTheUpstream) {
  HTTP_TEST_SETUP(up);
  RunResult r = fetch(grant("http://127.0.0.1:" + std::to_string(up.main)), {"-H", "X-Guest: yes", up.url("/headers")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("x-guest: yes\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("host: 127.0.0.1:" + std::to_string(up.main) + "\n"), std::string::npos) << r.out;
}

std::string freshSecret() {
  std::random_device rd;
  std::string s = "corral-sentinel-wasm-";
  for (int i = 0; i < 16; ++i) s += "0123456789abcdef"[rd() % 16];
  return s;
}

// A leased request through the proxy's broker (TLS to the test CA's server, done by the proxy).
struct LeaseSetup {
  std::string secret = freshSecret();
  EgressServers servers{{"CORRAL_TEST_LEASE_SECRET=" + secret}};
  Args opts(const Args& extra = {}) const {
    Args o = {"--credential", "api=API_TOKEN@" + servers.httpsUrl(), "--lease-ca", servers.cafile(), "--timeout", "30s"};
    o.insert(o.end(), extra.begin(), extra.end());
    return o;
  }
  RunOptions withSecret() const {
    RunOptions r;
    r.env_extra = {"API_TOKEN=" + secret};
    return r;
  }
};

TEST(WasmHttpLeaseNeverInside, TheProxyInjectsASecretTheGuestNeverSees) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "http_dump.wasm");
  LeaseSetup t;
  REQUIRE_SERVERS(t.servers);
  RunResult r = runWasm(t.opts(), guest, {t.servers.httpsUrl() + "/lease-check", "api"}, t.withSecret());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  // The upstream got the real secret (injection happened), and showed it back redacted.
  EXPECT_NE(r.out.find("auth=ok"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("raw=Bearer [REDACTED:api]"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("memory:\n"), std::string::npos) << "the guest did not dump its memory" << r.err;
  EXPECT_EQ(r.out.find(t.secret), std::string::npos) << claim("wasm.http-lease-never-inside", "the guest saw the secret");
  EXPECT_EQ(r.err.find(t.secret), std::string::npos) << claim("wasm.http-lease-never-inside", "a log or the report holds it");
  EXPECT_EQ(t.servers.count(true), 1);
}

TEST(WasmHttpLeaseNeverInside, ControlTheDumpShowsASecretPassedIn) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "http_dump.wasm");
  LeaseSetup t;
  REQUIRE_SERVERS(t.servers);
  RunResult r = runWasm(t.opts({"--env", "OTHER=" + t.secret}), guest, {t.servers.httpsUrl() + "/lease-check", "api"},
                        t.withSecret());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find(t.secret), std::string::npos) << "the dump would miss a secret in the guest's reach";
}

TEST(WasmHttpLeaseNeverInside, AnUnsetSecretRefusesTheRunWithoutRunningTheGuest) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "http_dump.wasm");
  RunResult r = runWasm({"--credential", "api=CORRAL_TEST_UNSET_TOKEN@https://127.0.0.1:1"}, guest, {"https://127.0.0.1:1/", "api"});
  EXPECT_TRUE(wasmRefused(r, "CORRAL_TEST_UNSET_TOKEN")) << r.describe();
}

TEST(WasmHttpLeaseNeverInside, ALeaseServesOnlyItsOwnOrigin) {
  HTTP_TEST_SETUP(up);
  LeaseSetup t;
  REQUIRE_SERVERS(t.servers);
  Args o = t.opts(grant("http://127.0.0.1:" + std::to_string(up.main)));
  RunResult r = runWasm(o, client_guest_, {"-L", "api", up.url("/elsewhere")}, t.withSecret());
  EXPECT_EQ(r.exit_code, 4) << r.describe();
  EXPECT_NE(r.err.find("corral_http error 76"), std::string::npos) << r.describe();
  EXPECT_EQ(up.count(), 0);
  EXPECT_EQ(t.servers.count(true), 0);
}

}  // namespace
}  // namespace corral::testing::wasm
