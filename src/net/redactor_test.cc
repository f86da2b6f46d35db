// SPDX-License-Identifier: Apache-2.0
#include "net/redactor.h"

#include <gtest/gtest.h>

#include <random>

#include "audit/base64.h"

namespace corral::net {
namespace {

// A sentinel with bytes that every encoding treats specially: '/', '+', '?', '&', ' ', '"'.
const std::string kSentinel = "corral-sentinel-7f3a/+?&= \"k\\ey~";
const std::string kMarker = "[REDACTED:gh]";

std::shared_ptr<const RedactionPatterns> patternsFor(std::vector<RedactTarget> targets) {
  return std::make_shared<const RedactionPatterns>(targets);
}

std::shared_ptr<const RedactionPatterns> sentinelPatterns() { return patternsFor({{"gh", kSentinel}}); }

// The test's own encoders, written independently of redactor.cc.
std::string pct(std::string_view s, bool upper, bool all) {
  std::string out;
  char buf[4];
  for (unsigned char c : s) {
    if (!all && (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')) {
      out += static_cast<char>(c);
      continue;
    }
    snprintf(buf, sizeof buf, upper ? "%%%02X" : "%%%02x", c);
    out += buf;
  }
  return out;
}

std::string hexOf(std::string_view s, bool upper) {
  std::string out;
  char buf[3];
  for (unsigned char c : s) {
    snprintf(buf, sizeof buf, upper ? "%02X" : "%02x", c);
    out += buf;
  }
  return out;
}

std::string toUrlSafe(std::string s) {
  for (char& c : s) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return s;
}

// base64 of `lead` bytes, the secret and a tail: the secret at each alignment in a stream.
std::string embeddedBase64(size_t lead, bool url) {
  std::string raw = std::string(lead, 'Q') + kSentinel + "tail";
  std::string b = audit::base64Encode(raw);
  return url ? toUrlSafe(b) : b;
}

// The secret's fully determined base64 characters at an alignment, by encoding twice with
// neighbours of all-0 and all-1 bits and keeping the common middle (no padding: the tail
// makes the length a multiple of 3, so every character holding a neighbour bit differs).
std::string determinedMiddle(size_t lead, bool url) {
  size_t tail = 3 + (3 - (lead + kSentinel.size()) % 3) % 3;
  std::string a = audit::base64Encode(std::string(lead, '\x00') + kSentinel + std::string(tail, '\x00'));
  std::string b = audit::base64Encode(std::string(lead, '\xff') + kSentinel + std::string(tail, '\xff'));
  size_t start = 0;
  while (a[start] != b[start]) ++start;
  size_t end = a.size();
  while (a[end - 1] != b[end - 1]) --end;
  std::string mid = a.substr(start, end - start);
  return url ? toUrlSafe(mid) : mid;
}

std::vector<std::string> allEncodings() {
  std::vector<std::string> out = {kSentinel,
                                  pct(kSentinel, true, false),
                                  pct(kSentinel, false, false),
                                  pct(kSentinel, true, true),
                                  pct(kSentinel, false, true),
                                  hexOf(kSentinel, true),
                                  hexOf(kSentinel, false)};
  std::string plus = pct(kSentinel, true, false);
  out.push_back(plus.replace(plus.find("%20"), 3, "+"));
  for (size_t lead = 0; lead < 3; ++lead)
    for (bool url : {false, true}) out.push_back(determinedMiddle(lead, url));
  return out;
}

TEST(Redactor, RawSecretIsReplacedByTheMarker) {
  auto p = sentinelPatterns();
  uint64_t n = 0;
  EXPECT_EQ(p->redactAll("token: " + kSentinel + "!", &n), "token: " + kMarker + "!");
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(p->redactAll("nothing here"), "nothing here");
}

TEST(Redactor, EveryEncodingIsRedacted) {
  auto p = sentinelPatterns();
  for (const std::string& enc : allEncodings()) {
    std::string text = "<<" + enc + ">>";
    std::string out = p->redactAll(text);
    EXPECT_NE(out.find(kMarker), std::string::npos) << "not redacted: " << enc;
    EXPECT_EQ(out.find(enc), std::string::npos) << enc;
  }
}

TEST(Redactor, Base64InsideALargerStreamAtEachAlignment) {
  auto p = sentinelPatterns();
  for (size_t lead = 0; lead < 3; ++lead) {
    for (bool url : {false, true}) {
      std::string b = embeddedBase64(lead, url);
      std::string out = p->redactAll(b);
      EXPECT_NE(out.find(kMarker), std::string::npos) << "lead " << lead << " url " << url << ": " << b;
      // At most a partial character either side of the marker is left of the secret.
      EXPECT_LE(out.size() - kMarker.size(), b.size() - determinedMiddle(lead, url).size());
      EXPECT_EQ(out.find(determinedMiddle(lead, url)), std::string::npos);
    }
  }
}

TEST(Redactor, JsonEscapedSlashForm) {
  auto p = patternsFor({{"k", "abc/def/ghi/jkl"}});
  EXPECT_EQ(p->redactAll(R"({"t":"abc\/def\/ghi\/jkl"})"), R"({"t":"[REDACTED:k]"})");
}

TEST(Redactor, OverlappingOccurrencesLeaveNoPartOfEither) {
  // The hex pattern of one secret ends inside the raw second one: a replace-and-skip scan
  // would leave the second secret's tail behind.
  std::string a = "AAAA-secret-1";
  std::string b = "Zsecret-two-XYZ";
  auto p = patternsFor({{"a", a}, {"b", b}});
  std::string text = "x" + a.substr(0, a.size() - 2) + "" + a.substr(a.size() - 2) + b + "y";
  std::string out = p->redactAll(text);
  EXPECT_EQ(out, "x[REDACTED:a][REDACTED:b]y");
  std::string overlap = "x" + a + "woo";  // a ends, then unrelated bytes
  EXPECT_EQ(p->redactAll(overlap), "x[REDACTED:a]woo");
  auto q = patternsFor({{"a", "abcdefgh"}, {"b", "efghijkl"}});
  EXPECT_EQ(q->redactAll("-abcdefghijkl-"), "-[REDACTED:a]-") << "overlap must leave nothing of b";
}

TEST(Redactor, HoldsBackLessThanTheLongestPattern) {
  auto p = sentinelPatterns();
  Redactor r(p);
  std::string in(10'000, 'x');
  size_t emitted = r.feed(in).size();
  EXPECT_EQ(in.size() - emitted, p->longest() - 1);
  EXPECT_EQ(r.finish(), std::string(p->longest() - 1, 'x'));
}

TEST(Redactor, SecretSplitAcrossEveryBoundary) {
  auto p = sentinelPatterns();
  std::string text = "head " + kSentinel + " tail";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    Redactor r(p);
    std::string out = r.feed(text.substr(0, cut));
    out += r.feed(text.substr(cut));
    out += r.finish();
    EXPECT_EQ(out, "head " + kMarker + " tail") << "cut at " << cut;
    EXPECT_EQ(r.redactions(), 1u);
  }
}

TEST(Redactor, NoPatternsPassesEverythingThrough) {
  auto p = patternsFor({{"empty", ""}});
  EXPECT_EQ(p->size(), 0u);
  Redactor r(p);
  EXPECT_EQ(r.feed("abc"), "abc");
  EXPECT_EQ(r.finish(), "");
}

TEST(Redactor, PropertyChunkedEqualsOneShotAndNoEncodingSurvives) {
  auto p = patternsFor({{"gh", kSentinel}, {"two", "second-secret-XYZ"}});
  std::vector<std::string> pieces = allEncodings();
  for (size_t lead = 0; lead < 3; ++lead) pieces.push_back(embeddedBase64(lead, lead == 1));
  pieces.push_back("second-secret-XYZ");
  pieces.push_back(kSentinel.substr(0, 10));  // a prefix that must not trigger anything
  std::mt19937 rng(4242);
  const std::string alphabet = "abcorl-7f3%2FA+/= \"\\";
  for (int iter = 0; iter < 400; ++iter) {
    std::string text;
    int parts = static_cast<int>(rng() % 8);
    for (int k = 0; k < parts; ++k) {
      for (size_t n = rng() % 20; n > 0; --n) text += alphabet[rng() % alphabet.size()];
      text += pieces[rng() % pieces.size()];
    }
    uint64_t one_shot_count = 0;
    std::string expected = p->redactAll(text, &one_shot_count);
    Redactor r(p);
    std::string got;
    for (size_t pos = 0; pos < text.size();) {
      size_t n = std::min<size_t>(text.size() - pos, rng() % 3 == 0 ? rng() % 3 : rng() % 90);
      got += r.feed(std::string_view(text).substr(pos, n));
      pos += n;
    }
    got += r.finish();
    ASSERT_EQ(got, expected) << "iteration " << iter;
    EXPECT_EQ(r.redactions(), one_shot_count);
    for (const std::string& enc : allEncodings()) ASSERT_EQ(got.find(enc), std::string::npos) << enc;
    ASSERT_EQ(got.find("second-secret-XYZ"), std::string::npos);
  }
}

}  // namespace
}  // namespace corral::net
