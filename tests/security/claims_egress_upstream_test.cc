// SPDX-License-Identifier: Apache-2.0
// Claim egress.upstream-proxy (claims/egress.toml): with --upstream-proxy corral decides
// first and then sends what it allowed through the parent, whose credential comes from the
// host side and never reaches the sandbox. The parent is Debian's squid
// (tests/security/squid_parent.py), with and without Basic auth, in the test's own network
// namespace beside an HTTP destination that records every request's headers.
#include <unistd.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness.h"
#include "private_netns.h"

namespace corral::testing {
namespace {

using Args = std::vector<std::string>;

constexpr char kClaim[] = "egress.upstream-proxy";
constexpr char kDest[] = "10.77.0.1";
constexpr char kParent[] = "10.77.0.9";
constexpr char kHosts[] =
    "127.0.0.1 localhost\n"
    "10.77.0.1 web.corp.test\n"
    "10.77.0.9 proxy.corp.test\n";
constexpr char kUser[] = "corral";
// The parent's password: it must appear nowhere the sandbox or the record can see.
const std::string kPassword = "corral-sentinel-parent-" + uniqueName("p").substr(2);

class EgressUpstreamProxy : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_ = enterPrivateNetwork({kDest, kParent}, kHosts);
    if (skip_.empty() && ::access("/usr/sbin/squid", X_OK) != 0) skip_ = "/usr/sbin/squid missing (scripts/bootstrap.sh installs it)";
  }
  static void TearDownTestSuite() {
    if (servers_) {
      servers_->closeStdin();
      servers_->exitedWithin(std::chrono::seconds(30));
    }
    delete servers_;
    delete dir_;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << "no private network for the parent proxy: " << skip_;
  }

  // Starts squid (with Basic auth when `auth`) and the destination, once per process.
  static ::testing::AssertionResult started(bool auth) {
    if (servers_ == nullptr) {
      dir_ = new TempDir("squid-parent");
      if (isRoot() && ::chown(dir_->path().c_str(), kNobody, kNobody) != 0)
        return ::testing::AssertionFailure() << "chown " << dir_->path();
      RunOptions o;
      o.stdin_pipe = true;
      o.deadline = std::chrono::minutes(10);
      if (isRoot()) o.as_user = kNobody;  // squid run as root would switch to its own user
      Args argv = {"/usr/bin/python3", std::string(CORRAL_SOURCE_DIR) + "/tests/security/squid_parent.py", dir_->path(),
                   kParent, kDest};
      if (auth) argv.push_back(std::string(kUser) + ":" + kPassword);
      servers_ = new Process(Process::start(argv, o));
      ready_ = servers_->readLine(std::chrono::seconds(60)).value_or("").find("\"parent\"") != std::string::npos;
    }
    if (ready_) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "squid_parent.py did not start: " << dir_->read("cache.log") << dir_->read("squid.out");
  }

  // curl inside `corral exec --net proxy` toward the destination, by forward request
  // (HTTP_PROXY) and by a SOCKS5 tunnel, with `flags` naming the parent.
  static RunResult fetch(const Args& flags, const RunOptions& o = {}) {
    Args opts = {"--net",   "proxy", "--timeout", "60s", "--allow", "http://web.corp.test:8080", "--allow",
                 "tcp://web.corp.test:8080", "--allow-internal", "10.77.0.0/16"};
    opts.insert(opts.end(), flags.begin(), flags.end());
    const std::string script =
        "echo \"inside: $HTTPS_PROXY\"; env | grep -c '" + kPassword + "'; grep -c '" + kPassword +
        "' /proc/self/environ; "
        "curl -sS --max-time 20 http://web.corp.test:8080/forward; echo; "
        "curl -sS --max-time 20 --socks5-hostname 127.0.0.1:3128 http://web.corp.test:8080/tunnel; echo";
    return runCorral(opts, {"sh", "-c", script}, o);
  }
  static std::vector<nlohmann::json> events(const RunResult& r) {
    std::vector<nlohmann::json> out;
    if (r.report && (*r.report)["egress"].is_array())
      for (const auto& e : (*r.report)["egress"]) out.push_back(e);
    return out;
  }
  // Requests squid carried toward the destination (its readiness probe is logged too, late).
  static size_t parentRequests() {
    const std::string log = dir_->read("access.log");
    size_t n = 0;
    for (size_t at = log.find("10.77.0.1:8080"); at != std::string::npos; at = log.find("10.77.0.1:8080", at + 1)) ++n;
    return n;
  }
  static std::string parentText() { return "proxy.corp.test:3128"; }  // as the operator named it

  // Both requests arrived, both through the parent, to the vetted address, and the sandbox
  // saw corral's proxy only: never the parent, never its password.
  static void expectThroughParent(const RunResult& r, const std::string& parent_in_event) {
    ASSERT_EQ(r.exit_code, 0) << r.describe() << dir_->read("cache.log");
    EXPECT_EQ(r.out, "inside: http://127.0.0.1:3128\n0\n0\ndest ok /forward\ndest ok /tunnel\n") << r.describe();
    const auto ev = events(r);
    ASSERT_EQ(ev.size(), 2u) << r.describe();
    for (const auto& e : ev) {
      EXPECT_EQ(e["decision"], "allow") << e.dump();
      EXPECT_EQ(e["resolved"], std::string(kDest) + ":8080") << "corral resolved and pinned it: " << e.dump();
      EXPECT_EQ(e["upstream_proxy"], parent_in_event) << claim(kClaim, "the request did not go through the parent") << e.dump();
    }
    const std::string access = dir_->read("access.log");
    EXPECT_NE(access.find("GET http://10.77.0.1:8080/forward"), std::string::npos) << access;
    EXPECT_NE(access.find("CONNECT 10.77.0.1:8080"), std::string::npos) << access;
    EXPECT_EQ(r.err.find(kPassword), std::string::npos) << claim(kClaim, "the parent's password in corral's output");
    EXPECT_EQ(dir_->read("requests").find(kPassword), std::string::npos) << "the destination got the parent's credential";
  }

  static inline std::string skip_;
  static inline TempDir* dir_ = nullptr;
  static inline Process* servers_ = nullptr;
  static inline bool ready_ = false;
};

TEST_F(EgressUpstreamProxy, AllowedTrafficGoesThroughSquidToTheVettedAddress) {
  ASSERT_TRUE(started(false));
  expectThroughParent(fetch({"--upstream-proxy", "http://proxy.corp.test:3128"}), parentText());
}

TEST_F(EgressUpstreamProxy, BasicAuthComesFromTheHostAndNeverReachesTheSandbox) {
  ASSERT_TRUE(started(true));
  RunOptions o;
  o.env_extra = {"CORRAL_TEST_PARENT_AUTH=" + std::string(kUser) + ":" + kPassword};
  expectThroughParent(fetch({"--upstream-proxy", "http://proxy.corp.test:3128", "--upstream-proxy-auth", "CORRAL_TEST_PARENT_AUTH"}, o),
                      parentText());
  // The control: without the credential squid refuses (407), and so does corral.
  RunResult none = fetch({"--upstream-proxy", "http://proxy.corp.test:3128"});
  EXPECT_EQ(none.out.find("dest ok"), std::string::npos) << claim(kClaim, "squid let an unauthenticated request through")
                                                         << none.describe();
  const auto ev = events(none);
  ASSERT_EQ(ev.size(), 2u) << none.describe();
  EXPECT_EQ(ev[0]["status"], 407) << "the forward request carries squid's own answer: " << ev[0].dump();
  EXPECT_EQ(ev[1]["rule"], "upstream-proxy-refused") << ev[1].dump();
  // The sentinel check's control: the password handed in on purpose is found.
  RunResult control = fetch({"--upstream-proxy", "http://proxy.corp.test:3128", "--env", "CONTROL=" + kPassword});
  EXPECT_EQ(control.out.rfind("inside: http://127.0.0.1:3128\n1\n1\n", 0), 0u) << "the sentinel check cannot see a leak: "
                                                                              << control.describe();
}

// `--upstream-proxy env`: the host's HTTPS_PROXY (password in its userinfo) and NO_PROXY.
TEST_F(EgressUpstreamProxy, EnvModeReadsTheHostsVariablesAndHonoursNoProxy) {
  ASSERT_TRUE(started(true));
  RunOptions o;
  o.env_extra = {"HTTPS_PROXY=http://" + std::string(kUser) + ":" + kPassword + "@proxy.corp.test:3128", "NO_PROXY="};
  expectThroughParent(fetch({"--upstream-proxy", "env"}, o), parentText());
  // NO_PROXY exempts the destination: dialled directly, the parent sees nothing more.
  const size_t before = parentRequests();
  o.env_extra.back() = "NO_PROXY=localhost,.corp.test";
  RunResult direct = fetch({"--upstream-proxy", "env"}, o);
  ASSERT_EQ(direct.exit_code, 0) << direct.describe();
  EXPECT_NE(direct.out.find("dest ok /forward\ndest ok /tunnel\n"), std::string::npos) << direct.describe();
  for (const auto& e : events(direct)) EXPECT_FALSE(e.contains("upstream_proxy")) << e.dump();
  EXPECT_EQ(parentRequests(), before);
}

TEST_F(EgressUpstreamProxy, CorralDecidesFirstARefusedRequestNeverReachesTheParent) {
  ASSERT_TRUE(started(false));
  const size_t before = parentRequests();
  Args opts = {"--net", "proxy", "--allow", "http://web.corp.test:8080", "--upstream-proxy", "http://proxy.corp.test:3128"};
  // Ungranted port, and the granted name without its CIDR (private address).
  RunResult r = runCorral(opts, {"sh", "-c", "curl -sS --max-time 20 http://web.corp.test:8081/; curl -sS --max-time 20 http://web.corp.test:8080/"});
  const auto ev = events(r);
  ASSERT_EQ(ev.size(), 2u) << r.describe();
  EXPECT_EQ(ev[0]["rule"], "port-mismatch");
  EXPECT_EQ(ev[1]["rule"], "private-address");
  EXPECT_EQ(parentRequests(), before) << claim(kClaim, "a refused request reached the parent");
  EXPECT_EQ(dir_->read("access.log").find("web.corp.test"), std::string::npos) << "the parent was asked for a name";
}

TEST_F(EgressUpstreamProxy, BadParentsFailBeforeAnythingRuns) {
  const std::string secret = "corral-sentinel-url-" + uniqueName("u").substr(2);
  for (const Args& flags : {Args{"--upstream-proxy", "https://proxy.corp.test:3128"},
                            Args{"--upstream-proxy", "http://u:" + secret + "@proxy.corp.test:3128/path"},
                            Args{"--upstream-proxy-auth", "CORRAL_TEST_PARENT_AUTH"},
                            Args{"--upstream-proxy", "http://proxy.corp.test:3128", "--upstream-proxy-auth", "CORRAL_UNSET_VAR"},
                            Args{"--upstream-proxy", "http://no-such-parent.corp.test:3128"}}) {
    Args opts = {"--net", "proxy", "--allow", "http://web.corp.test:8080"};
    opts.insert(opts.end(), flags.begin(), flags.end());
    RunResult r = runCorral(opts, {"sh", "-c", "echo ran"});
    // Refused by the launcher (syntax) or by the proxy before the command may start (a
    // variable or a name only the host can check); either way exit 125 and nothing ran.
    EXPECT_EQ(r.exit_code, 125) << r.describe();
    EXPECT_EQ(r.out, "") << r.describe();
    ASSERT_FALSE(r.stderrLines().empty()) << r.describe();
    EXPECT_EQ(r.stderrLines()[0].rfind("corral: ", 0), 0u) << r.describe();
    EXPECT_EQ(r.err.find(secret), std::string::npos) << "the URL's password was echoed: " << r.err;
  }
}

}  // namespace
}  // namespace corral::testing
