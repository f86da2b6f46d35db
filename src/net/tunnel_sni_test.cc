// SPDX-License-Identifier: Apache-2.0
#include "net/tunnel_sni.h"

#include <gtest/gtest.h>

namespace corral::net {
namespace {

namespace eg = policy::egress;

eg::Host host(const char* text) { return eg::canonicalHost(text).value(); }
SniResult found(const char* name) { return {SniStatus::kFound, name, ""}; }
SniResult absent() { return {SniStatus::kAbsent, "", ""}; }

std::string ruleOf(const std::optional<TunnelRefusal>& r) { return r ? r->rule : "allowed"; }

TEST(TunnelSni, NameAuthorityNeedsTheSameNameInSni) {
  EXPECT_EQ(ruleOf(checkTunnelSni(host("api.example.com"), found("api.example.com"))), "allowed");
  // Canonicalised before comparing: case, trailing dot, IDNA.
  EXPECT_EQ(ruleOf(checkTunnelSni(host("api.example.com"), found("API.Example.COM."))), "allowed");
  EXPECT_EQ(ruleOf(checkTunnelSni(host("bücher.example"), found("xn--bcher-kva.example"))), "allowed");
  EXPECT_EQ(ruleOf(checkTunnelSni(host("api.example.com"), found("evil.example.com"))), "sni-mismatch");
  EXPECT_EQ(ruleOf(checkTunnelSni(host("api.example.com"), found("api.example.com.evil"))), "sni-mismatch");
  EXPECT_EQ(ruleOf(checkTunnelSni(host("api.example.com"), absent())), "sni-mismatch");
  EXPECT_EQ(ruleOf(checkTunnelSni(host("api.example.com"), found("api.example.com\r\nx"))), "sni-mismatch");
}

TEST(TunnelSni, IpAuthorityAllowsNoSniOrTheSameAddress) {
  EXPECT_EQ(ruleOf(checkTunnelSni(host("127.0.0.1"), absent())), "allowed");
  EXPECT_EQ(ruleOf(checkTunnelSni(host("127.0.0.1"), found("127.0.0.1"))), "allowed");
  EXPECT_EQ(ruleOf(checkTunnelSni(host("127.0.0.1"), found("2130706433"))), "allowed");
  EXPECT_EQ(ruleOf(checkTunnelSni(host("127.0.0.1"), found("localhost"))), "sni-mismatch");
  EXPECT_EQ(ruleOf(checkTunnelSni(host("127.0.0.1"), found("127.0.0.2"))), "sni-mismatch");
}

TEST(TunnelSni, NotTlsAndMalformedAreRefused) {
  EXPECT_EQ(ruleOf(checkTunnelSni(host("127.0.0.1"), {SniStatus::kNotTls, "", ""})), "tunnel-not-tls");
  EXPECT_EQ(ruleOf(checkTunnelSni(host("127.0.0.1"), {SniStatus::kMalformed, "", "x"})), "tls-malformed");
}

}  // namespace
}  // namespace corral::net
