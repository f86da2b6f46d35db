// SPDX-License-Identifier: Apache-2.0
// Tests for grant parsing and matching, including a randomized comparison with a reference.
#include "policy/egress_grant.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "policy/egress_reference_test_util.h"
#include "policy/egress_vectors_test_data.h"

namespace corral::policy::egress {
namespace {

Host host(std::string_view text) {
  auto h = canonicalHost(text);
  EXPECT_TRUE(h.ok()) << text;
  return h.ok() ? *h : Host{};
}

std::vector<Grant> grants(std::initializer_list<std::string_view> texts) {
  std::vector<Grant> out;
  for (std::string_view t : texts) {
    auto g = parseGrant(t);
    EXPECT_TRUE(g.ok()) << t << ": " << g.error().message();
    if (g.ok()) out.push_back(*g);
  }
  return out;
}

TEST(ParseGrant, PublishedVectors) {
  for (const auto& v : vectors::kGrants) {
    auto g = parseGrant(v.input);
    if (v.expect.rfind("refused:", 0) == 0) {
      ASSERT_FALSE(g.ok()) << "accepted '" << v.input << "' as " << g->text();
      EXPECT_NE(g.error().message().find(v.expect.substr(8)), std::string::npos)
          << v.input << ": " << g.error().message();
    } else {
      ASSERT_TRUE(g.ok()) << v.input << ": " << g.error().message();
      EXPECT_EQ(g->text(), v.expect);
      auto again = parseGrant(g->text());  // the canonical text is a grant meaning the same
      ASSERT_TRUE(again.ok()) << g->text();
      EXPECT_EQ(*again, *g);
    }
  }
}

TEST(ParseGrants, NamesThePositionOfTheFirstBadGrant) {
  const std::vector<std::string> texts = {"https://a.example.com", "https://*.com", "ftp://x"};
  auto r = parseGrants(texts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "grant 2: grant 'https://*.com': a wildcard needs a domain of two or more labels");
  auto ok = parseGrants(std::span(texts).first(1));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->size(), 1u);
}

TEST(Decide, EmptyGrantListDeniesEverything) {
  for (Scheme s : {Scheme::kHttp, Scheme::kHttps}) {
    Decision d = decide({}, s, host("example.com"), defaultPort(s));
    EXPECT_EQ(ruleId(d.rule), "no-grant");
    EXPECT_FALSE(d.allowed());
    EXPECT_EQ(d.granted_by, std::nullopt);
  }
}

TEST(Decide, SchemeHostAndPortMustAllMatch) {
  auto g = grants({"https://api.example.com"});
  EXPECT_TRUE(decide(g, Scheme::kHttps, host("api.example.com"), 443).allowed());
  EXPECT_EQ(ruleId(decide(g, Scheme::kHttps, host("api.example.com"), 8443).rule), "port-mismatch");
  EXPECT_EQ(ruleId(decide(g, Scheme::kHttp, host("api.example.com"), 80).rule), "scheme-mismatch");
  EXPECT_EQ(ruleId(decide(g, Scheme::kHttp, host("api.example.com"), 443).rule), "scheme-mismatch");
  EXPECT_EQ(ruleId(decide(g, Scheme::kHttps, host("example.com"), 443).rule), "no-grant");
}

TEST(Decide, ReasonNamesTheRequestAndTheGrant) {
  auto g = grants({"https://api.example.com"});
  Decision d = decide(g, Scheme::kHttps, host("api.example.com"), 8443);
  EXPECT_EQ(d.reason, "https://api.example.com:8443: this port is not granted (https://api.example.com:443 is)");
  d = decide(g, Scheme::kHttps, host("api.example.com"), 443);
  EXPECT_EQ(d.reason, "https://api.example.com:443 granted by https://api.example.com:443");
  EXPECT_EQ(d.granted_by, 0u);
}

TEST(Decide, WildcardCoversSubdomainsOnly) {
  auto g = grants({"https://*.example.com"});
  for (std::string_view h : {"a.example.com", "a.b.example.com", "A.EXAMPLE.COM."})
    EXPECT_TRUE(decide(g, Scheme::kHttps, host(h), 443).allowed()) << h;
  for (std::string_view h : {"example.com", "evilexample.com", "a.example.com.evil.com", "example.com.evil.com", "com"})
    EXPECT_EQ(ruleId(decide(g, Scheme::kHttps, host(h), 443).rule), "no-grant") << h;
}

TEST(Decide, FirstMatchingGrantIsReported) {
  auto g = grants({"http://example.com", "https://*.example.com", "https://a.example.com"});
  Decision d = decide(g, Scheme::kHttps, host("a.example.com"), 443);
  ASSERT_TRUE(d.allowed());
  EXPECT_EQ(d.granted_by, 1u);
}

// A small alphabet where hosts nest, share suffixes, and differ only by case or a dot.
constexpr std::string_view kHostsAlphabet[] = {
    "example.com", "a.example.com", "b.a.example.com", "example.org", "evilexample.com",
    "a.example.com.evil.com", "com", "127.0.0.1", "[::1]", "xn--bcher-kva.example"};
constexpr int kPorts[] = {80, 443, 8080, 8443};

std::string mutateCase(std::string s, std::mt19937& rng) {
  for (char& c : s)
    if (c >= 'a' && c <= 'z' && rng() % 4 == 0) c = static_cast<char>(c - 'a' + 'A');
  if (s[0] != '[' && rng() % 5 == 0) s += '.';
  return s;
}

TEST(Decide, AgreesWithTheReferenceMatcherOnRandomGrantSets) {
  std::mt19937 rng(20261129);
  int allowed = 0, refused = 0;
  for (int round = 0; round < 10000; ++round) {
    std::vector<Grant> real;
    std::vector<reference::RefGrant> ref;
    int n = static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) {
      std::string text = rng() % 2 ? "https://" : "http://";
      if (rng() % 3 == 0) text += "*.";
      text += mutateCase(std::string(kHostsAlphabet[rng() % std::size(kHostsAlphabet)]), rng);
      if (rng() % 2) text += ":" + std::to_string(kPorts[rng() % std::size(kPorts)]);
      auto g = parseGrant(text);
      auto r = reference::refParse(text);
      ASSERT_EQ(g.ok(), r.has_value()) << text;
      if (!g.ok()) continue;
      real.push_back(*g);
      ref.push_back(*r);
    }
    Scheme scheme = rng() % 2 ? Scheme::kHttps : Scheme::kHttp;
    std::string h = mutateCase(std::string(kHostsAlphabet[rng() % std::size(kHostsAlphabet)]), rng);
    int port = kPorts[rng() % std::size(kPorts)];
    if (!ref.empty() && rng() % 2) {  // aim at a grant, so that allowed outcomes are common
      const reference::RefGrant& aim = ref[rng() % ref.size()];
      h = (aim.wildcard ? "x." : "") + aim.host;
      if (rng() % 2) scheme = aim.scheme == "http" ? Scheme::kHttp : Scheme::kHttps;
      if (rng() % 2) port = aim.port;
    }
    Decision d = decide(real, scheme, host(h), static_cast<uint16_t>(port));
    reference::RefDecision want = reference::refDecide(ref, std::string(schemeName(scheme)), reference::refHost(h), port);
    ASSERT_EQ(ruleId(d.rule), want.rule) << "round " << round << " request " << h << ":" << port;
    if (d.allowed()) {
      ASSERT_EQ(static_cast<int>(*d.granted_by), want.granted_by);
      ++allowed;
    } else {
      ++refused;
    }
  }
  // Control: the alphabet produces both outcomes often, so agreement means something.
  EXPECT_GT(allowed, 500);
  EXPECT_GT(refused, 500);
}

}  // namespace
}  // namespace corral::policy::egress
