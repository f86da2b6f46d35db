// SPDX-License-Identifier: Apache-2.0
// Claim egress.internal-by-cidr (claims/egress.toml): `corral exec --allow-internal CIDR` lets a
// granted name resolve into that CIDR and nowhere else. The test process moves into a network
// and mount namespace of its own (private_netns.h) where internal addresses sit on loopback and
// its /etc/hosts names them, so corral's proxy resolves the names as it would on a corporate
// network, and real servers answer at those addresses. Each refusal is checked at the server.
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness.h"
#include "private_netns.h"
#include "run_fixture.h"

namespace corral::testing {
namespace {

using Args = std::vector<std::string>;

constexpr char kClaim[] = "egress.internal-by-cidr";

// 10.77.0.1 is the internal registry, 10.78.0.1 its neighbour, 169.254.169.254 a stand-in for
// a cloud metadata service; mixed.corp.test answers with the registry and loopback at once.
const Args kAddresses = {"10.77.0.1", "10.78.0.1", "169.254.169.254"};
constexpr char kHosts[] =
    "127.0.0.1 localhost\n"
    "10.77.0.1 registry.corp.test\n"
    "10.78.0.1 other.corp.test\n"
    "169.254.169.254 meta.corp.test\n"
    "10.77.0.1 mixed.corp.test\n"
    "127.0.0.1 mixed.corp.test\n";

class EgressInternalByCidr : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_ = enterPrivateNetwork(kAddresses, kHosts);
    if (!skip_.empty()) return;
    dir_ = new TempDir("internal-servers");
    RunOptions o;
    o.stdin_pipe = true;
    o.deadline = std::chrono::minutes(10);
    Args argv = {"/usr/bin/python3", std::string(CORRAL_SOURCE_DIR) + "/tests/net/internal_servers.py", dir_->path()};
    argv.insert(argv.end(), kAddresses.begin(), kAddresses.end());
    servers_ = new Process(Process::start(argv, o));
    auto line = servers_->readLine(std::chrono::seconds(60));
    auto j = nlohmann::json::parse(line.value_or(""), nullptr, false);
    port_ = j.is_object() ? j.value("port", 0) : 0;
  }
  static void TearDownTestSuite() {
    if (servers_) {
      servers_->closeStdin();
      servers_->exitedWithin(std::chrono::seconds(5));
    }
    delete servers_;
    delete dir_;
    servers_ = nullptr;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << "no private network namespace for the internal servers: " << skip_;
    ASSERT_GT(port_, 0) << "internal_servers.py did not start";
  }

  static std::string url(const std::string& host, const std::string& path = "/") {
    return "http://" + host + ":" + std::to_string(port_) + path;
  }
  // What the servers answered, one "<address> <path>" per request, in order.
  static std::string requests() { return dir_->read("requests"); }

  // curl inside `corral exec --net proxy --allow http://HOST:PORT [--allow-internal C]...`,
  // printing the body, or the status and X-Corral-Denied value of a refusal.
  static RunResult fetch(const std::string& host, const Args& internal, const std::string& path = "/") {
    Args opts = {"--net", "proxy", "--timeout", "60s", "--allow", url(host)};
    for (const std::string& c : internal) opts.insert(opts.end(), {"--allow-internal", c});
    const std::string script = "curl -sS -D /tmp/h --max-time 20 '" + url(host, path) +
                               "'; rc=$?; echo; grep -i '^x-corral-denied:' /tmp/h | tr -d '\\r' || true; exit $rc";
    return runCorral(opts, {"sh", "-c", script});
  }

  static const nlohmann::json* onlyEvent(const RunResult& r) {
    if (!r.report || !(*r.report)["egress"].is_array() || (*r.report)["egress"].size() != 1) return nullptr;
    return &(*r.report)["egress"][0];
  }

  static void expectRefused(const RunResult& r, const std::string& what) {
    EXPECT_NE(r.out.find("X-Corral-Denied: private-address"), std::string::npos) << claim(kClaim, what) << r.describe();
    EXPECT_EQ(r.out.find("internal ok"), std::string::npos) << claim(kClaim, what) << r.describe();
    const nlohmann::json* e = onlyEvent(r);
    ASSERT_TRUE(e) << r.describe();
    EXPECT_EQ((*e)["rule"], "private-address");
    EXPECT_EQ((*e)["resolved"], "") << "nothing may be dialled: " << e->dump();
    EXPECT_FALSE(e->contains("internal")) << e->dump();
  }

  static inline std::string skip_;
  static inline TempDir* dir_ = nullptr;
  static inline Process* servers_ = nullptr;
  static inline int port_ = 0;
};

TEST_F(EgressInternalByCidr, NamedGrantReachesTheMatchingCidrAndTheTraceNamesIt) {
  const std::string before = requests();
  RunResult r = fetch("registry.corp.test", {"10.77.0.0/16"}, "/left-pad");
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "internal ok at 10.77.0.1 /left-pad\n") << r.describe();
  EXPECT_EQ(requests(), before + "10.77.0.1 /left-pad\n");
  const nlohmann::json* e = onlyEvent(r);
  ASSERT_TRUE(e) << r.describe();
  EXPECT_EQ((*e)["decision"], "allow");
  EXPECT_EQ((*e)["destination"], "registry.corp.test:" + std::to_string(port_));
  EXPECT_EQ((*e)["resolved"], "10.77.0.1:" + std::to_string(port_));
  EXPECT_EQ((*e)["internal"], "10.77.0.0/16") << "the CIDR that admitted the address: " << e->dump();
}

// The control: the same request without the CIDR is refused, and the server saw nothing.
TEST_F(EgressInternalByCidr, WithoutTheCidrTheGrantedNameIsRefused) {
  const std::string before = requests();
  RunResult r = fetch("registry.corp.test", {});
  expectRefused(r, "a granted name reached a private address without --allow-internal");
  EXPECT_NE(r.out.find("10.77.0.1"), std::string::npos) << "the refusal names the address: " << r.describe();
  EXPECT_EQ(requests(), before);
}

TEST_F(EgressInternalByCidr, NeighbouringCidrsAreRefused) {
  const std::string before = requests();
  for (const Args& internal : {Args{"10.78.0.0/16"}, Args{"10.77.1.0/24"}, Args{"10.76.0.0/16", "10.78.0.0/15"}}) {
    RunResult r = fetch("registry.corp.test", internal);
    expectRefused(r, "10.77.0.1 reached under " + internal.back());
    EXPECT_NE(r.out.find("outside every --allow-internal CIDR"), std::string::npos) << r.describe();
  }
  // The neighbour's own name, under the registry's CIDR.
  expectRefused(fetch("other.corp.test", {"10.77.0.0/16"}), "10.78.0.1 reached under 10.77.0.0/16");
  EXPECT_EQ(requests(), before) << claim(kClaim, "a refused address was dialled");
}

TEST_F(EgressInternalByCidr, MetadataAddressOpensOnlyToItsExactCidr) {
  const std::string before = requests();
  for (const std::string c : {"169.254.0.0/16", "169.254.169.0/24", "0.0.0.0/0"}) {
    RunResult r = fetch("meta.corp.test", {c});
    expectRefused(r, "the metadata address reached under " + c);
    EXPECT_NE(r.out.find("within 169.254.169.254/32"), std::string::npos) << r.describe();
  }
  EXPECT_EQ(requests(), before) << claim(kClaim, "the metadata stand-in was dialled");
  RunResult exact = fetch("meta.corp.test", {"169.254.169.254/32"}, "/latest");
  ASSERT_EQ(exact.exit_code, 0) << exact.describe();
  EXPECT_EQ(exact.out, "internal ok at 169.254.169.254 /latest\n") << exact.describe();
  const nlohmann::json* e = onlyEvent(exact);
  ASSERT_TRUE(e) << exact.describe();
  EXPECT_EQ((*e)["internal"], "169.254.169.254/32");
}

TEST_F(EgressInternalByCidr, AnAnswerMixingInLoopbackIsRefusedWhole) {
  const std::string before = requests();
  RunResult r = fetch("mixed.corp.test", {"10.77.0.0/16"});
  expectRefused(r, "an answer holding loopback was used");
  EXPECT_NE(r.out.find("127.0.0.1"), std::string::npos) << "the answer held both addresses: " << r.describe();
  EXPECT_EQ(requests(), before);
}

// `corral run`: the manifest's network.internal is the same CIDR list, and the trace names it.
TEST_F(EgressInternalByCidr, ManifestNetworkInternalAdmitsOnlyItsCidrAndTheTraceNamesIt) {
  auto curl = [](const std::string& target) {
    return call("run", {{"command", "curl"}, {"args", {"-sS", "--max-time", "20", target}}});
  };
  auto runWith = [&](const Args& internal) {
    RunFixture f;
    f.manifest["executables"] = {"curl"};
    f.manifest["network"] = {{"allow", {url("registry.corp.test"), url("meta.corp.test")}}};
    if (!internal.empty()) f.manifest["network"]["internal"] = internal;
    f.reply({curl(url("registry.corp.test", "/by-manifest"))});
    f.reply({curl(url("meta.corp.test", "/latest"))});
    f.reply({call("finish", {{"summary", "done"}})});
    RunResult r = f.run({"--apply"});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    return f.entries("egress");
  };
  const std::string before = requests();
  const auto egress = runWith({"10.77.0.0/16", "169.254.0.0/16"});
  ASSERT_EQ(egress.size(), 2u);
  EXPECT_EQ(egress[0]["decision"], "allow") << egress[0].dump();
  EXPECT_EQ(egress[0]["resolved"], "10.77.0.1:" + std::to_string(port_));
  EXPECT_EQ(egress[0]["internal"], "10.77.0.0/16") << "the trace names the admitting CIDR: " << egress[0].dump();
  // 169.254.0.0/16 is a network, not the metadata address inside it.
  EXPECT_EQ(egress[1]["rule"], "private-address") << claim(kClaim, "the metadata stand-in reached under 169.254.0.0/16");
  EXPECT_EQ(egress[1]["resolved"], "") << egress[1].dump();
  EXPECT_EQ(requests(), before + "10.77.0.1 /by-manifest\n");
  // The control: the same manifest without network.internal reaches neither.
  const auto without = runWith({});
  ASSERT_EQ(without.size(), 2u);
  for (const auto& e : without) {
    EXPECT_EQ(e["rule"], "private-address") << claim(kClaim, "a manifest without network.internal reached 10.77.0.1");
    EXPECT_FALSE(e.contains("internal")) << e.dump();
  }
  EXPECT_EQ(requests(), before + "10.77.0.1 /by-manifest\n");
}

TEST_F(EgressInternalByCidr, MalformedOrUselessCidrsFailBeforeAnythingRuns) {
  const Args grant = {"--net", "proxy", "--allow", url("registry.corp.test")};
  for (const std::string c : {"10.77.0.1/16", "10.77.0.0", "10.77.0.0/33", "10.77/16", "registry.corp.test/16", "10.0.0.0/08"}) {
    Args opts = grant;
    opts.insert(opts.end(), {"--allow-internal", c});
    RunResult r = runCorral(opts, {"sh", "-c", "echo ran"});
    EXPECT_TRUE(refusedBeforeRun(r)) << c << "\n" << r.describe();
    EXPECT_NE(r.err.find("--allow-internal"), std::string::npos) << r.describe();
  }
  RunResult twice = runCorral({"--net", "proxy", "--allow", url("registry.corp.test"), "--allow-internal", "10.0.0.0/8",
                               "--allow-internal", "10.0.0.0/8"},
                              {"sh", "-c", "echo ran"});
  EXPECT_TRUE(refusedBeforeRun(twice)) << twice.describe();
  RunResult no_grant = runCorral({"--net", "proxy", "--allow-internal", "10.0.0.0/8"}, {"sh", "-c", "echo ran"});
  EXPECT_TRUE(refusedBeforeRun(no_grant)) << no_grant.describe();
  RunResult no_proxy = runCorral({"--allow-internal", "10.0.0.0/8"}, {"sh", "-c", "echo ran"});
  EXPECT_TRUE(refusedBeforeRun(no_proxy)) << no_proxy.describe();
}

}  // namespace
}  // namespace corral::testing
