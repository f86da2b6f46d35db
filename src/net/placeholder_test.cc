// SPDX-License-Identifier: Apache-2.0
#include "net/placeholder.h"

#include <gtest/gtest.h>

namespace corral::net {
namespace {

namespace egress = policy::egress;

const std::string kSentinel = "corral-sentinel-7f3a-secret-value";
const std::string kPh = "corral-lease-gh-0123456789abcdef0123456789abcdef";

RequestDestination dest(std::string_view url_authority, egress::Scheme scheme, uint16_t port) {
  auto h = egress::canonicalHost(url_authority);
  EXPECT_TRUE(h.ok());
  return {scheme, *h, port};
}

class PlaceholderTest : public ::testing::Test {
 protected:
  PlaceholderTest() : secret_(Secret(kSentinel)) {
    auto g = egress::parseGrant("http://api.example:8080");
    EXPECT_TRUE(g.ok());
    rules_.push_back({"gh", kPh, *g, &secret_});
  }
  SecretCell secret_;
  std::vector<PlaceholderRule> rules_;
  RequestDestination own_ = dest("API.example", egress::Scheme::kHttp, 8080);
};

TEST_F(PlaceholderTest, SwappedInTheLeaseHeaderAndFormatTowardItsOwnDestination) {
  std::vector<HeaderField> headers = {{"Host", "api.example:8080"}, {"authorization", "Bearer " + kPh}};
  auto r = substitutePlaceholders(rules_, own_, "http://api.example:8080/v1/x", headers);
  ASSERT_EQ(r.substituted.size(), 1u);
  EXPECT_EQ(r.substituted[0].index, 1u);
  EXPECT_EQ(r.substituted[0].value.revealForInjection(), "Bearer " + kSentinel);
  EXPECT_EQ(r.leases_used, std::vector<std::string>{"gh"});
  EXPECT_TRUE(r.suspects.empty());
  EXPECT_EQ(headers[1].value, "Bearer " + kPh) << "the caller's list must stay as it was";
}

// The sandbox picks the header: if any header were swapped, it could have the upstream store
// the secret (a note, a User-Agent in a session list) and fetch it back unredacted later.
TEST_F(PlaceholderTest, NeverSwappedInAnotherHeaderOrValueShape) {
  const std::vector<HeaderField> cases[] = {
      {{"X-Note", kPh}},
      {{"User-Agent", "Bearer " + kPh}},
      {{"Authorization", kPh}},
      {{"Authorization", "token " + kPh}},
      {{"Authorization", "Bearer " + kPh + " " + kPh}},
      {{"Authorization", "Bearer " + kPh + ","}},
  };
  for (const auto& headers : cases) {
    auto r = substitutePlaceholders(rules_, own_, "/", headers);
    EXPECT_TRUE(r.substituted.empty()) << headers[0].name << ": " << headers[0].value;
    EXPECT_TRUE(r.leases_used.empty());
    ASSERT_EQ(r.suspects.size(), 1u);
    EXPECT_EQ(r.suspects[0], (Suspect{"gh", SuspectPlace::kHeaderUndeclared, headers[0].name}));
  }
}

TEST_F(PlaceholderTest, DeclaredHeaderAndFormatAreHonoured) {
  auto g = egress::parseGrant("http://api.example:8080");
  ASSERT_TRUE(g.ok());
  std::vector<PlaceholderRule> rules = {{"gh", kPh, *g, &secret_, "X-Api-Key", "key={}"}};
  std::vector<HeaderField> headers = {{"x-api-key", "key=" + kPh}, {"Authorization", "Bearer " + kPh}};
  auto r = substitutePlaceholders(rules, own_, "/", headers);
  ASSERT_EQ(r.substituted.size(), 1u);
  EXPECT_EQ(r.substituted[0].index, 0u);
  EXPECT_EQ(r.substituted[0].value.revealForInjection(), "key=" + kSentinel);
  ASSERT_EQ(r.suspects.size(), 1u);
  EXPECT_EQ(r.suspects[0], (Suspect{"gh", SuspectPlace::kHeaderUndeclared, "Authorization"}));
}

TEST_F(PlaceholderTest, NeverSwappedTowardAnotherSchemeHostOrPort) {
  const RequestDestination others[] = {
      dest("api.example", egress::Scheme::kHttp, 80),
      dest("api.example", egress::Scheme::kHttps, 8080),
      dest("evil.example", egress::Scheme::kHttp, 8080),
      dest("sub.api.example", egress::Scheme::kHttp, 8080),
  };
  for (const RequestDestination& d : others) {
    std::vector<HeaderField> headers = {{"Authorization", "Bearer " + kPh}};
    auto r = substitutePlaceholders(rules_, d, "http://x/", headers);
    EXPECT_TRUE(r.substituted.empty()) << d.host.text << ":" << d.port;
    EXPECT_TRUE(r.leases_used.empty());
    ASSERT_EQ(r.suspects.size(), 1u) << d.host.text;
    EXPECT_EQ(r.suspects[0], (Suspect{"gh", SuspectPlace::kHeaderOtherDestination, "Authorization"}));
  }
}

TEST_F(PlaceholderTest, WildcardGrantNeverMatches) {
  auto g = egress::parseGrant("http://*.corp.example:8080");
  ASSERT_TRUE(g.ok()) << g.error().message();
  std::vector<PlaceholderRule> rules = {{"gh", kPh, *g, &secret_}};
  std::vector<HeaderField> headers = {{"Authorization", kPh}};
  for (const char* host : {"corp.example", "a.corp.example"}) {
    auto r = substitutePlaceholders(rules, dest(host, egress::Scheme::kHttp, 8080), "/", headers);
    EXPECT_TRUE(r.substituted.empty()) << host;
    EXPECT_EQ(r.suspects.size(), 1u) << host;
  }
}

TEST_F(PlaceholderTest, TargetAndHeaderNameAreSuspectsAndNeverSwapped) {
  std::vector<HeaderField> headers = {{"X-" + kPh, "1"}};
  auto r = substitutePlaceholders(rules_, own_, "http://api.example:8080/?k=" + kPh, headers);
  EXPECT_TRUE(r.substituted.empty());
  ASSERT_EQ(r.suspects.size(), 2u);
  EXPECT_EQ(r.suspects[0].place, SuspectPlace::kHeaderName);
  EXPECT_EQ(r.suspects[1], (Suspect{"gh", SuspectPlace::kTarget, ""}));
}

TEST_F(PlaceholderTest, OtherSpellingIsReportedNotSwapped) {
  std::string upper = kPh;
  for (char& c : upper) c = static_cast<char>(toupper(c));
  std::vector<HeaderField> headers = {{"Authorization", "Bearer " + upper}};
  auto r = substitutePlaceholders(rules_, own_, "/", headers);
  EXPECT_TRUE(r.substituted.empty());
  ASSERT_EQ(r.suspects.size(), 1u);
  EXPECT_EQ(r.suspects[0].place, SuspectPlace::kHeaderOtherSpelling);
  auto other = substitutePlaceholders(rules_, own_, "http://api.example:8080/" + upper, {});
  ASSERT_EQ(other.suspects.size(), 1u);
  EXPECT_EQ(other.suspects[0].place, SuspectPlace::kTarget);
}

TEST_F(PlaceholderTest, ControlNoPlaceholderNoReport) {
  std::vector<HeaderField> headers = {{"Authorization", "Bearer corral-lease-gh-"}, {"Accept", "*/*"}};
  auto r = substitutePlaceholders(rules_, own_, "http://api.example:8080/", headers);
  EXPECT_TRUE(r.substituted.empty());
  EXPECT_TRUE(r.suspects.empty());
}

TEST(PlaceholderDetector, FindsAcrossEveryChunkBoundary) {
  std::string other = "corral-lease-b-ffffffffffffffffffffffffffffffff";
  std::string body = "{\"token\": \"" + kPh + "\"}";
  for (size_t cut = 0; cut <= body.size(); ++cut) {
    for (size_t cut2 = cut; cut2 <= body.size(); cut2 += 7) {
      PlaceholderDetector d({other, kPh});
      d.feed(body.substr(0, cut));
      d.feed(body.substr(cut, cut2 - cut));
      d.feed(body.substr(cut2));
      EXPECT_EQ(d.found(), std::vector<size_t>{1}) << cut << "," << cut2;
    }
  }
}

TEST(PlaceholderDetector, ByteAtATimeAndCaseInsensitive) {
  PlaceholderDetector d({kPh});
  std::string upper = "xx" + kPh + "yy";
  for (char& c : upper) c = static_cast<char>(toupper(c));
  for (char c : upper) d.feed(std::string_view(&c, 1));
  EXPECT_EQ(d.found(), std::vector<size_t>{0});
}

TEST(PlaceholderDetector, ControlPrefixOnlyIsNotAFinding) {
  PlaceholderDetector d({kPh});
  d.feed(kPh.substr(0, kPh.size() - 1));
  d.feed("!" + kPh.substr(kPh.size() - 1));
  EXPECT_TRUE(d.found().empty());
}

}  // namespace
}  // namespace corral::net
