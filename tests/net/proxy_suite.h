// SPDX-License-Identifier: Apache-2.0
// ProxySuite: the GoogleTest fixture the proxy integration tests derive from. One set of
// upstreams per test suite, a fresh ProxyServer per test. Header-only because it needs
// GoogleTest, which only the test binaries link (not corral_net_test_fixture).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "net_fixture.h"

namespace corral::net::testing {

class ProxySuite : public ::testing::Test {
 protected:
  // A suite whose upstreams cannot start (no python3 or openssl) skips every test with the
  // reason; a derived suite that needs more sets skip_ itself.
  static void SetUpTestSuite() {
    std::string why;
    auto u = startUpstreams(&why);
    if (!u) {
      skip_ = why;
      return;
    }
    up_ = new Upstreams(std::move(*u));
  }
  static void TearDownTestSuite() {
    if (up_) stopUpstreams(*up_);
    delete up_;
    up_ = nullptr;
    skip_.clear();
  }
  void SetUp() override {
    if (!up_ || !skip_.empty()) GTEST_SKIP() << skip_;
  }
  // Every connection event has been reported once the proxy is gone.
  void TearDown() override { proxy_.reset(); }

  // Starts proxy_ with `options`, its connection events going to events_.
  void startServer(ProxyOptions options) {
    options.on_event = [this](const ConnectionEvent& e) { events_.add(e); };
    auto s = ProxyServer::start(std::move(options));
    EXPECT_TRUE(s.ok());
    proxy_ = std::move(*s);
  }
  // startServer, then a listener on 127.0.0.1 (port picked by the kernel) whose clients get
  // tag and grants; returns its port.
  uint16_t startProxyAs(const std::string& tag, const std::vector<std::string>& grants, ProxyOptions options) {
    startServer(std::move(options));
    auto port = proxy_->listen("127.0.0.1", 0, policyOf(tag, grants));
    EXPECT_TRUE(port.ok()) << port.error().message();
    return *port;
  }

  static inline Upstreams* up_ = nullptr;
  static inline std::string skip_;
  std::unique_ptr<ProxyServer> proxy_;
  EventLog events_;
};

}  // namespace corral::net::testing
