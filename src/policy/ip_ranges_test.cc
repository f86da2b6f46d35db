// SPDX-License-Identifier: Apache-2.0
// Tests for address classification: every refused range, its edges, embedded IPv4.
#include "policy/ip_ranges.h"

#include <gtest/gtest.h>

#include <string>

#include "policy/egress_host.h"

namespace corral::policy::egress {
namespace {

IpAddress ip(std::string_view text) {
  auto h = canonicalHost(text.find(':') != std::string_view::npos ? "[" + std::string(text) + "]" : std::string(text));
  EXPECT_TRUE(h.ok()) << text;
  if (!h.ok() || h->kind == HostKind::kName) return {};
  return h->ip;
}

// Mapped addresses canonicalise to IPv4; build the IPv6 form by hand to test classify().
IpAddress mapped(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return ipv6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d});
}

struct Case {
  std::string_view address;
  AddressClass cls;
  std::string_view range;
};

TEST(Classify, EveryRefusedRangeAndItsEdges) {
  const Case cases[] = {
      {"0.0.0.0", AddressClass::kUnspecified, "0.0.0.0/8"},
      {"0.255.255.255", AddressClass::kUnspecified, "0.0.0.0/8"},
      {"1.0.0.0", AddressClass::kPublic, ""},
      {"9.255.255.255", AddressClass::kPublic, ""},
      {"10.0.0.0", AddressClass::kPrivate, "10.0.0.0/8"},
      {"10.255.255.255", AddressClass::kPrivate, "10.0.0.0/8"},
      {"11.0.0.0", AddressClass::kPublic, ""},
      {"100.63.255.255", AddressClass::kPublic, ""},
      {"100.64.0.1", AddressClass::kSharedCgnat, "100.64.0.0/10"},
      {"100.127.255.255", AddressClass::kSharedCgnat, "100.64.0.0/10"},
      {"100.128.0.0", AddressClass::kPublic, ""},
      {"127.0.0.1", AddressClass::kLoopback, "127.0.0.0/8"},
      {"127.255.255.254", AddressClass::kLoopback, "127.0.0.0/8"},
      {"169.254.169.254", AddressClass::kLinkLocal, "169.254.0.0/16"},
      {"169.255.0.0", AddressClass::kPublic, ""},
      {"172.15.255.255", AddressClass::kPublic, ""},
      {"172.16.0.0", AddressClass::kPrivate, "172.16.0.0/12"},
      {"172.31.255.255", AddressClass::kPrivate, "172.16.0.0/12"},
      {"172.32.0.0", AddressClass::kPublic, ""},
      {"192.0.0.8", AddressClass::kReserved, "192.0.0.0/24"},
      {"192.0.2.1", AddressClass::kDocumentation, "192.0.2.0/24"},
      {"192.88.99.1", AddressClass::kReserved, "192.88.99.0/24"},
      {"192.167.255.255", AddressClass::kPublic, ""},
      {"192.168.0.1", AddressClass::kPrivate, "192.168.0.0/16"},
      {"198.18.0.1", AddressClass::kReserved, "198.18.0.0/15"},
      {"198.19.255.255", AddressClass::kReserved, "198.18.0.0/15"},
      {"198.20.0.0", AddressClass::kPublic, ""},
      {"198.51.100.7", AddressClass::kDocumentation, "198.51.100.0/24"},
      {"203.0.113.7", AddressClass::kDocumentation, "203.0.113.0/24"},
      {"223.255.255.255", AddressClass::kPublic, ""},
      {"224.0.0.1", AddressClass::kMulticast, "224.0.0.0/4"},
      {"239.255.255.255", AddressClass::kMulticast, "224.0.0.0/4"},
      {"240.0.0.1", AddressClass::kReserved, "240.0.0.0/4"},
      {"255.255.255.254", AddressClass::kReserved, "240.0.0.0/4"},
      {"255.255.255.255", AddressClass::kBroadcast, "255.255.255.255/32"},
      {"93.184.216.34", AddressClass::kPublic, ""},
      {"8.8.8.8", AddressClass::kPublic, ""},
      {"::", AddressClass::kUnspecified, "::/128"},
      {"::1", AddressClass::kLoopback, "::1/128"},
      {"::2", AddressClass::kReserved, "outside 2000::/3"},
      {"::7f00:1", AddressClass::kReserved, "outside 2000::/3"},  // IPv4-compatible, deprecated
      {"64:ff9b:1::1", AddressClass::kReserved, "outside 2000::/3"},
      {"100::1", AddressClass::kReserved, "outside 2000::/3"},
      {"fec0::1", AddressClass::kReserved, "outside 2000::/3"},
      {"fc00::1", AddressClass::kUniqueLocal, "fc00::/7"},
      {"fdff:ffff::1", AddressClass::kUniqueLocal, "fc00::/7"},
      {"fe80::1", AddressClass::kLinkLocal, "fe80::/10"},
      {"febf::1", AddressClass::kLinkLocal, "fe80::/10"},
      {"ff02::1", AddressClass::kMulticast, "ff00::/8"},
      {"2001:db8::1", AddressClass::kDocumentation, "2001:db8::/32"},
      {"3fff::1", AddressClass::kDocumentation, "3fff::/20"},
      {"2001::1", AddressClass::kReserved, "2001::/23"},  // Teredo
      {"2001:2::1", AddressClass::kReserved, "2001::/23"},
      {"2001:200::1", AddressClass::kPublic, ""},
      {"2606:4700::1111", AddressClass::kPublic, ""},
      {"2a00:1450::1", AddressClass::kPublic, ""},
      {"4000::1", AddressClass::kReserved, "outside 2000::/3"},
  };
  for (const Case& c : cases) {
    Classification got = classify(ip(c.address));
    EXPECT_EQ(className(got.cls), className(c.cls)) << c.address;
    EXPECT_EQ(got.range, c.range) << c.address;
    EXPECT_EQ(got.embedding, "") << c.address;
  }
}

TEST(Classify, EmbeddedIpv4IsClassifiedAsThatAddress) {
  const std::pair<IpAddress, AddressClass> cases[] = {
      {mapped(127, 0, 0, 1), AddressClass::kLoopback},
      {mapped(169, 254, 169, 254), AddressClass::kLinkLocal},
      {mapped(8, 8, 8, 8), AddressClass::kPublic},
      {ip("64:ff9b::a00:1"), AddressClass::kPrivate},
      {ip("64:ff9b::808:808"), AddressClass::kPublic},
      {ip("2002:7f00:1::1"), AddressClass::kLoopback},
      {ip("2002:a9fe:a9fe::"), AddressClass::kLinkLocal},
      {ip("2002:808:808::1"), AddressClass::kPublic},
  };
  for (const auto& [address, cls] : cases) {
    Classification got = classify(address);
    EXPECT_EQ(className(got.cls), className(cls)) << formatIp(address);
    EXPECT_NE(got.embedding, "") << formatIp(address);
  }
  EXPECT_EQ(classify(mapped(127, 0, 0, 1)).embedding, "::ffff:0:0/96");
  EXPECT_EQ(classify(mapped(127, 0, 0, 1)).range, "127.0.0.0/8");
}

}  // namespace
}  // namespace corral::policy::egress
