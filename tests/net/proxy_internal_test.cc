// SPDX-License-Identifier: Apache-2.0
// --allow-internal at the proxy: a resolver the test controls answers a granted name with
// internal addresses that real servers hold in the test's own network namespace
// (private_netns.h). Each lookup is vetted and the address vetted is the one dialled, so an
// answer that changes between lookups (DNS rebinding) cannot move a connection; and the
// log line names the CIDR that admitted the address.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "base/log.h"
#include "net_fixture.h"
#include "private_netns.h"

namespace corral::net::testing {
namespace {

namespace eg = policy::egress;

class ProxyInternal : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_ = corral::testing::enterPrivateNetwork({"10.77.0.1", "10.78.0.1"}, "");
    if (!skip_.empty()) return;
    char tmpl[] = "/tmp/corral-internal-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    if (d == nullptr) {
      skip_ = "mkdtemp failed";
      return;
    }
    dir_ = d;
    auto h = startHelper("internal_servers.py", {dir_, "10.77.0.1", "10.78.0.1"}, {}, &skip_);
    if (!h) return;
    helper_ = new Helper(std::move(*h));
    port_ = portOf(*helper_, "port");
  }
  static void TearDownTestSuite() {
    if (helper_) stopHelper(*helper_);
    delete helper_;
    helper_ = nullptr;
    if (!dir_.empty()) run("rm -rf '" + dir_ + "'");
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << "no private network namespace for the internal servers: " << skip_;
    ASSERT_GT(port_, 0) << "internal_servers.py printed no port";
  }
  void TearDown() override { proxy_.reset(); }

  // A proxy granting http://registry.corp.test:<port> with `internal`, names resolved by `resolve`.
  uint16_t startProxy(const std::vector<std::string>& internal, Resolver resolve) {
    ProxyOptions o;
    o.resolve = std::move(resolve);
    o.on_event = [this](const ConnectionEvent& e) { events_.add(e); };
    auto s = ProxyServer::start(std::move(o));
    EXPECT_TRUE(s.ok());
    proxy_ = std::move(*s);
    auto policy = std::make_shared<ClientPolicy>(*policyOf("run-internal", {"http://registry.corp.test:" + std::to_string(port_)}));
    for (const std::string& c : internal) policy->internal.push_back(*eg::parseCidr(c));
    auto port = proxy_->listen("127.0.0.1", 0, policy);
    EXPECT_TRUE(port.ok());
    return port.ok() ? *port : 0;
  }
  std::string get(uint16_t proxy, const std::string& path) {
    return run("curl -sS -i --max-time 20 -x http://127.0.0.1:" + std::to_string(proxy) + " 'http://registry.corp.test:" +
               std::to_string(port_) + path + "'");
  }
  static std::string requests() {
    std::ifstream f(dir_ + "/requests");
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }

  static inline std::string skip_, dir_;
  static inline Helper* helper_ = nullptr;
  static inline uint16_t port_ = 0;
  std::unique_ptr<ProxyServer> proxy_;
  EventLog events_;
};

// The resolver alternates between the CIDR's address and its neighbour's, as a rebinding
// name would. Every request looks the name up once; the one whose answer is inside the CIDR
// reaches that very address, the other is refused and nothing is dialled.
TEST_F(ProxyInternal, RebindingBetweenLookupsIsPinnedToTheVettedAddress) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  uint16_t p = startProxy({"10.77.0.0/16"}, [calls](const std::string&) -> Result<std::vector<eg::IpAddress>> {
    const int n = ++*calls;
    return std::vector{n % 2 == 1 ? eg::ipv4(10, 77, 0, 1) : eg::ipv4(10, 78, 0, 1)};
  });
  const std::string before = requests();
  std::string first = get(p, "/one");
  EXPECT_EQ(statusOf(first), 200) << first;
  EXPECT_NE(first.find("internal ok at 10.77.0.1 /one"), std::string::npos) << first;
  EXPECT_EQ(calls->load(), 1) << "one lookup per request";
  std::string second = get(p, "/two");
  EXPECT_EQ(statusOf(second), 403) << second;
  EXPECT_EQ(deniedOf(second), "private-address") << second;
  EXPECT_EQ(calls->load(), 2);
  std::string third = get(p, "/three");
  EXPECT_NE(third.find("internal ok at 10.77.0.1 /three"), std::string::npos) << third;
  EXPECT_EQ(requests(), before + "10.77.0.1 /one\n10.77.0.1 /three\n") << "the neighbour was never dialled";
  auto refused = events_.waitFor("private-address");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->resolved, "");
  EXPECT_EQ(refused->internal, "");
  auto allowed = events_.waitFor("allowed");
  ASSERT_TRUE(allowed);
  EXPECT_EQ(allowed->resolved, "10.77.0.1:" + std::to_string(port_));
  EXPECT_EQ(allowed->internal, "10.77.0.0/16");
}

// The control for the test above: the same alternating resolver without the CIDR reaches
// neither address.
TEST_F(ProxyInternal, WithoutTheCidrNeitherAnswerIsDialled) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  uint16_t p = startProxy({}, [calls](const std::string&) -> Result<std::vector<eg::IpAddress>> {
    return std::vector{++*calls % 2 == 1 ? eg::ipv4(10, 77, 0, 1) : eg::ipv4(10, 78, 0, 1)};
  });
  const std::string before = requests();
  EXPECT_EQ(deniedOf(get(p, "/a")), "private-address");
  EXPECT_EQ(deniedOf(get(p, "/b")), "private-address");
  EXPECT_EQ(requests(), before);
}

// Allowed requests are logged at info: with that level on, the line names the CIDR.
TEST_F(ProxyInternal, TheLogLineNamesTheAdmittingCidr) {
  uint16_t p = startProxy({"10.78.0.0/16", "10.77.0.0/16"}, [](const std::string&) -> Result<std::vector<eg::IpAddress>> {
    return std::vector{eg::ipv4(10, 77, 0, 1)};
  });
  const std::string log_path = dir_ + "/log";
  const int saved = ::dup(2);
  const int file = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_TRUE(saved >= 0 && file >= 0);
  ::dup2(file, 2);
  ::close(file);
  log::setLevel(log::Level::kInfo);
  std::string out = get(p, "/logged?secret=sentinel-q9");
  auto e = events_.waitFor("allowed");
  log::setLevel(log::Level::kWarn);
  ::dup2(saved, 2);
  ::close(saved);
  EXPECT_EQ(statusOf(out), 200) << out;
  ASSERT_TRUE(e);
  std::ifstream f(log_path);
  std::stringstream s;
  s << f.rdbuf();
  const std::string log = s.str();
  EXPECT_NE(log.find("internal=10.77.0.0/16"), std::string::npos) << log;
  EXPECT_NE(log.find("resolved=10.77.0.1:"), std::string::npos) << log;
  EXPECT_EQ(log.find("sentinel-q9"), std::string::npos) << "a query reached the log: " << log;
}

}  // namespace
}  // namespace corral::net::testing
