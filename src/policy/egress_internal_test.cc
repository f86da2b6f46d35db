// SPDX-License-Identifier: Apache-2.0
// Internal CIDRs: the published parse vectors, containment, and the protected ranges.
#include "policy/egress_internal.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/egress_host.h"
#include "policy/egress_vectors_test_data.h"
#include "policy/units.h"

namespace corral::policy::egress {
namespace {

IpAddress ip(const std::string& text) {
  auto h = canonicalHost(text.find(':') != std::string::npos ? "[" + text + "]" : text);
  EXPECT_TRUE(h.ok() && h->kind != HostKind::kName) << text;
  return h.ok() ? h->ip : IpAddress{};
}

Cidr cidr(const std::string& text) {
  auto c = parseCidr(text);
  EXPECT_TRUE(c.ok()) << text;
  return c.ok() ? *c : Cidr{};
}

TEST(Cidr, PublishedCidrVectors) {
  for (const auto& v : vectors::kCidrs) {
    auto c = parseCidr(v.input);
    const std::string expect(v.expect), shown = printable(v.input);
    if (expect.rfind("cidr:", 0) == 0) {
      ASSERT_TRUE(c.ok()) << shown << ": " << c.error().message();
      EXPECT_EQ("cidr:" + c->text(), expect) << shown;
    } else {
      ASSERT_FALSE(c.ok()) << shown << " parsed as " << c->text();
      EXPECT_NE(c.error().message().find(expect.substr(8)), std::string::npos) << shown << ": " << c.error().message();
      EXPECT_EQ(c.error().message().find('\n'), std::string::npos) << "one line: " << shown;
    }
  }
}

TEST(Cidr, ContainsExactlyItsPrefix) {
  EXPECT_TRUE(cidrContains(cidr("10.20.0.0/16"), ip("10.20.255.255")));
  EXPECT_FALSE(cidrContains(cidr("10.20.0.0/16"), ip("10.21.0.0")));
  EXPECT_FALSE(cidrContains(cidr("10.20.0.0/16"), ip("10.19.255.255")));
  EXPECT_TRUE(cidrContains(cidr("0.0.0.0/0"), ip("255.255.255.255")));
  EXPECT_TRUE(cidrContains(cidr("fd00::/8"), ip("fdff:ffff::1")));
  EXPECT_FALSE(cidrContains(cidr("fd00::/8"), ip("fc00::1")));
  // Families never mix: ::/0 holds no IPv4 address, 0.0.0.0/0 no IPv6 one.
  EXPECT_FALSE(cidrContains(cidr("::/0"), ip("10.0.0.1")));
  EXPECT_FALSE(cidrContains(cidr("0.0.0.0/0"), ip("fd00::1")));
}

TEST(InternalAdmitting, ReturnsTheFirstAdmittingCidr) {
  std::vector<Cidr> internal = {cidr("10.30.0.0/16"), cidr("10.0.0.0/8"), cidr("10.20.0.0/16")};
  EXPECT_EQ(internalAdmitting(internal, ip("10.20.1.1")), 1u);
  EXPECT_EQ(internalAdmitting(internal, ip("10.30.1.1")), 0u);
  EXPECT_EQ(internalAdmitting(internal, ip("192.168.0.1")), std::nullopt);
  EXPECT_EQ(internalAdmitting({}, ip("10.20.1.1")), std::nullopt);
}

// Every metadata address is refused by the widest CIDR and admitted by its exact /32 or /128.
TEST(InternalAdmitting, MetadataAddressesOpenOnlyToTheirExactCidr) {
  for (const std::string m : {"169.254.169.254", "169.254.170.2", "169.254.170.23", "100.100.100.200", "192.0.0.192"}) {
    EXPECT_EQ(protectedRange(ip(m)), m + "/32");
    EXPECT_EQ(internalAdmitting(std::vector{cidr("0.0.0.0/0")}, ip(m)), std::nullopt) << m;
    EXPECT_EQ(internalAdmitting(std::vector{cidr(m + "/32")}, ip(m)), 0u) << m;
  }
  for (const std::string m : {"fd00:ec2::254", "fd00:ec2::23", "fd20:ce::254"}) {
    EXPECT_EQ(protectedRange(ip(m)), m + "/128");
    EXPECT_EQ(internalAdmitting(std::vector{cidr("::/0")}, ip(m)), std::nullopt) << m;
    EXPECT_EQ(internalAdmitting(std::vector{cidr("fd00::/8")}, ip(m)), std::nullopt) << m;
    EXPECT_EQ(internalAdmitting(std::vector{cidr(m + "/128")}, ip(m)), 0u) << m;
  }
  // Their neighbours are ordinary members of their ranges.
  EXPECT_EQ(internalAdmitting(std::vector{cidr("fd00::/8")}, ip("fd00:ec2::253")), 0u);
  EXPECT_EQ(internalAdmitting(std::vector{cidr("100.64.0.0/10")}, ip("100.100.100.201")), 0u);
}

TEST(InternalAdmitting, PublicAddressesNeedNoCidrButACidrMayHoldThem) {
  EXPECT_EQ(protectedRange(ip("93.184.216.34")), "");
  EXPECT_EQ(internalAdmitting(std::vector{cidr("93.184.216.0/24")}, ip("93.184.216.34")), 0u);
}

}  // namespace
}  // namespace corral::policy::egress
