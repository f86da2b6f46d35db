// SPDX-License-Identifier: Apache-2.0
// Tests for egress host canonicalisation: the published vectors, lengths, idempotence.
#include "policy/egress_host.h"

#include <gtest/gtest.h>

#include <string>

#include "policy/egress_vectors_test_data.h"

namespace corral::policy::egress {
namespace {

std::string kindName(HostKind k) {
  switch (k) {
    case HostKind::kName: return "name";
    case HostKind::kIpv4: return "ipv4";
    case HostKind::kIpv6: return "ipv6";
  }
  return "?";
}

// The vector's expectation written the same way: "ipv4:127.0.0.1" or "refused:<message>".
std::string outcome(const Result<Host>& r) {
  if (!r.ok()) return "refused:" + r.error().message();
  return kindName(r->kind) + ":" + r->text;
}

bool oneLine(const std::string& s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  return !s.empty();
}

void expectOutcome(std::string_view input, std::string_view expect, const std::string& got) {
  if (expect.rfind("refused:", 0) == 0) {
    ASSERT_EQ(got.rfind("refused:", 0), 0u) << "accepted '" << input << "' as " << got;
    EXPECT_NE(got.find(expect.substr(8)), std::string::npos) << "'" << input << "': " << got;
    EXPECT_TRUE(oneLine(got)) << "error for '" << input << "' is not one printable line";
  } else {
    EXPECT_EQ(got, expect) << "input '" << input << "'";
  }
}

TEST(CanonicalHost, PublishedVectors) {
  for (const auto& v : vectors::kHosts) expectOutcome(v.input, v.expect, outcome(canonicalHost(v.input)));
}

TEST(CanonicalHost, IsIdempotentOnEveryAcceptedVector) {
  int accepted = 0;
  for (const auto& v : vectors::kHosts) {
    auto once = canonicalHost(v.input);
    if (!once.ok()) continue;
    ++accepted;
    auto twice = canonicalHost(authorityText(*once));
    ASSERT_TRUE(twice.ok()) << v.input << " -> " << once->text << ": " << twice.error().message();
    EXPECT_EQ(*twice, *once) << v.input;
  }
  EXPECT_GT(accepted, 40);  // control: the loop really ran over the accepted vectors
}

TEST(CanonicalHost, LabelAndNameLengthLimits) {
  const std::string l63(63, 'a'), l64(64, 'a');
  EXPECT_TRUE(canonicalHost(l63 + ".com").ok());
  EXPECT_EQ(canonicalHost(l64 + ".com").error().message(), "host '" + l64 + ".com': has a label longer than 63 bytes");
  // 4 labels of 61 + 3 dots + "abcdefg" ... built to exactly 253 and 254 bytes.
  std::string name;
  while (name.size() < 253 - 62) name += std::string(61, 'b') + ".";
  std::string n253 = name + std::string(253 - name.size(), 'c');
  std::string n254 = name + std::string(254 - name.size(), 'c');
  ASSERT_EQ(n253.size(), 253u);
  auto ok = canonicalHost(n253);
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_TRUE(canonicalHost(n253 + ".").ok()) << "the trailing dot does not count";
  EXPECT_NE(canonicalHost(n254).error().message().find("longer than 253 bytes"), std::string::npos);
  EXPECT_NE(canonicalHost(std::string(1025, 'a')).error().message().find("longer than 1024 bytes"), std::string::npos);
}

TEST(CanonicalHost, ErrorsEchoInputEscapedAndCut) {
  auto r = canonicalHost(std::string("evil\n") + std::string(300, 'x') + "\r");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kInvalidArgument));
  EXPECT_TRUE(oneLine(r.error().message())) << r.error().message();
  EXPECT_NE(r.error().message().find("evil\\n"), std::string::npos) << r.error().message();
  EXPECT_LT(r.error().message().size(), 200u);
}

TEST(FormatIp, Rfc5952AndDottedQuad) {
  EXPECT_EQ(formatIp(ipv4(10, 0, 0, 255)), "10.0.0.255");
  EXPECT_EQ(formatIp(ipv6({})), "::");
  EXPECT_EQ(formatIp(ipv6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})), "2001:db8::1");
  EXPECT_EQ(formatIp(ipv6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xab, 0xcd})), "::abcd");
  EXPECT_EQ(formatIp(ipv6({0xab, 0xcd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})), "abcd::");
}

TEST(ParsePort, PublishedVectors) {
  for (const auto& v : vectors::kPorts) {
    auto r = parsePort(v.input);
    expectOutcome(v.input, v.expect, r.ok() ? std::to_string(*r) : "refused:" + r.error().message());
  }
}

TEST(ParseAuthority, HostAndOptionalPort) {
  auto a = parseAuthority("Example.COM:8080");
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->host.text, "example.com");
  EXPECT_EQ(a->port, 8080);
  a = parseAuthority("[::1]");
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->host.kind, HostKind::kIpv6);
  EXPECT_EQ(a->port, std::nullopt);
  a = parseAuthority("[::ffff:10.1.2.3]:443");
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->host.kind, HostKind::kIpv4);
  EXPECT_EQ(a->host.ip, ipv4(10, 1, 2, 3));
  EXPECT_EQ(authorityText(a->host), "10.1.2.3");
}

TEST(ParseAuthority, RefusesUserinfoBracketJunkAndBadPorts) {
  const std::pair<std::string_view, std::string_view> bad[] = {
      {"user:pass@example.com:80", "userinfo"},
      {"example.com@evil.com", "userinfo"},
      {"[::1]x", "not ':port'"},
      {"[::1", "without ']'"},
      {"example.com:80:81", "not a decimal number"},
      {"example.com:", "is empty"},
      {":80", "is empty"},
      {"[::1]:0", "is 0"},
  };
  for (const auto& [text, why] : bad) {
    auto r = parseAuthority(text);
    ASSERT_FALSE(r.ok()) << "accepted " << text;
    EXPECT_NE(r.error().message().find(why), std::string::npos) << text << ": " << r.error().message();
  }
}

}  // namespace
}  // namespace corral::policy::egress
