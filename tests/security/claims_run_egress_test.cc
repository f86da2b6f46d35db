// SPDX-License-Identifier: Apache-2.0
// The egress and lease claims under `corral run`: the manifest's network.allow and
// credentials drive the same proxy as `exec --net proxy`; every `run` tool call gets its own
// channel; each connection and lease use becomes a trace entry; the secret never reaches the
// sandbox, the model or the record.
#include <string>
#include <vector>

#include "egress_fixture.h"
#include "harness.h"
#include "run_fixture.h"

namespace corral::testing {
namespace {

using json = nlohmann::json;

struct RunEgressCase {
  std::string secret = "corral-sentinel-run-lease-" + uniqueName("s").substr(2);
  EgressServers servers{{"CORRAL_TEST_LEASE_SECRET=" + secret}};
  RunFixture f;

  RunEgressCase() {
    f.manifest["executables"] = {"curl"};
    f.manifest["network"] = {{"allow", {servers.httpUrl()}}};
    // Broker mode toward plain HTTP: the upstream checks the header (no CA needed).
    f.manifest["credentials"] = {{{"name", "api"}, {"env", "API_TOKEN"}, {"url", servers.httpUrl()}}};
  }
  RunOptions withSecret() const {
    RunOptions o;
    o.env_extra = {"API_TOKEN=" + secret};
    return o;
  }
};

json curlCall(const std::string& url) { return call("run", {{"command", "curl"}, {"args", {"-sS", "--max-time", "20", url}}}); }

TEST(EgressAllowlistOnly, RunnerCommandsGoOutOnlyThroughTheManifestGrants) {
  RunEgressCase t;
  REQUIRE_SERVERS(t.servers);
  t.f.reply({curlCall(t.servers.httpUrl() + "/granted")});
  t.f.reply({curlCall(t.servers.gitUrl() + "/not-granted")});
  t.f.reply({call("run", {{"command", "curl"}, {"args", {"-sS", "--noproxy", "127.0.0.1", "--max-time", "5", t.servers.httpUrl() + "/direct"}}})});
  t.f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = t.f.run({"--apply"}, t.withSecret());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const auto egress = t.f.entries("egress");
  ASSERT_EQ(egress.size(), 2u) << r.describe();  // the direct attempt never reaches the proxy
  EXPECT_EQ(egress[0]["decision"], "allow");
  EXPECT_EQ(egress[0]["resolved"], "127.0.0.1:" + std::to_string(t.servers.http));
  EXPECT_EQ(egress[1]["decision"], "refuse");
  EXPECT_EQ(egress[1]["rule"], "port-mismatch");
  EXPECT_EQ(t.servers.count(false), 1) << claim("egress.allowlist-only", "a runner command got past the grants");
  const auto calls = t.f.toolCalls();
  ASSERT_GE(calls.size(), 3u);
  ASSERT_EQ(calls[2].value("decision", ""), "allow") << calls[2].dump();
  EXPECT_NE(calls[2].value("exit_code", 0), 0) << "a direct connection from a runner command succeeded";
}

TEST(LeasesNoSecretsInLogs, RunnerTraceAndResultHoldNoSecret) {
  RunEgressCase t;
  REQUIRE_SERVERS(t.servers);
  t.f.reply({curlCall("http://127.0.0.1:3128/lease/api/lease-check")});
  t.f.reply({call("run", {{"command", "curl"}, {"args", {"-sS", "--max-time", "20", "http://127.0.0.1:3128/lease/nope/x"}}})});
  t.f.reply({call("finish", {{"summary", "done"}})});
  // --trace-content full keeps what each command printed (what the model saw) as blobs.
  RunResult r = t.f.run({"--apply", "--trace-content", "full"}, t.withSecret());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const auto leases = t.f.entries("lease");
  ASSERT_EQ(leases.size(), 2u) << r.describe();
  EXPECT_EQ(leases[0]["lease"], "api");
  EXPECT_EQ(leases[0]["status"], 200);
  EXPECT_EQ(leases[0]["path_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(leases[1]["rule"], "lease-unknown");
  const std::string record = t.f.allRecordBytes();
  // The upstream saw the real secret (the model's output says so) ...
  EXPECT_NE(record.find("auth=ok"), std::string::npos) << "the lease was not injected";
  EXPECT_NE(record.find("[REDACTED:api]"), std::string::npos);
  // ... and nothing corral wrote holds it.
  EXPECT_EQ(record.find(t.secret), std::string::npos) << claim("leases.no-secrets-in-logs", "secret in .corral/");
  EXPECT_EQ(r.err.find(t.secret), std::string::npos) << claim("leases.no-secrets-in-logs", "secret on stderr");
  EXPECT_EQ(r.out.find(t.secret), std::string::npos);
}

TEST(LeasesSecretNeverInside, RunnerCommandsSeeOnlyThePlaceholder) {
  RunEgressCase t;
  REQUIRE_SERVERS(t.servers);
  t.f.manifest["executables"] = {"env", "curl"};
  t.f.reply({call("run", {{"command", "env"}, {"args", json::array()}})});
  t.f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = t.f.run({"--apply", "--trace-content", "full"}, t.withSecret());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::string record = t.f.allRecordBytes();
  EXPECT_NE(record.find("API_TOKEN=corral-lease-api-"), std::string::npos) << "no placeholder in the command's environment";
  EXPECT_NE(record.find("HTTPS_PROXY=http://127.0.0.1:3128"), std::string::npos);
  EXPECT_EQ(record.find(t.secret), std::string::npos) << claim("leases.secret-never-inside", "secret in a runner command's environment");
}

}  // namespace
}  // namespace corral::testing
