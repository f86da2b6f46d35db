// SPDX-License-Identifier: Apache-2.0
// Canonical JSON vectors: key order, escapes, UTF-8, integers, and the strict parser.
#include "audit/canonical_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace corral::audit {
namespace {

std::string canon(const nlohmann::json& j) {
  auto r = canonicalJson(j);
  EXPECT_TRUE(r.ok()) << r.error().message();
  return r ? *r : "";
}

TEST(CanonicalJson, SortsKeysAndDropsWhitespace) {
  auto j = nlohmann::json::parse(R"( { "b" : [3, 1, {"z":null,"y":true}], "a" : {"d":false,"c":-7} } )");
  EXPECT_EQ(canon(j), R"({"a":{"c":-7,"d":false},"b":[3,1,{"y":true,"z":null}]})");
  EXPECT_EQ(canon(nlohmann::json::object()), "{}");
  EXPECT_EQ(canon(nlohmann::json::array()), "[]");
  EXPECT_EQ(canon(""), R"("")");
}

TEST(CanonicalJson, SortsKeysByUtf16CodeUnitsNotCodePoints) {
  // U+1F600 is D83D DE00 in UTF-16, so it sorts before U+FB33 there, but after it in
  // UTF-8 byte (and code point) order. RFC 8785 section 3.2.3 uses UTF-16.
  nlohmann::json j = {{"\xef\xac\xb3", 1}, {"\xf0\x9f\x98\x80", 2}, {"\xe2\x82\xac", 3},
                      {"a", 4},            {"\r", 5},               {"1", 6}, {"A", 7}};
  EXPECT_EQ(canon(j), "{\"\\r\":5,\"1\":6,\"A\":7,\"a\":4,\"\xe2\x82\xac\":3,\"\xf0\x9f\x98\x80\":2,\"\xef\xac\xb3\":1}");
}

TEST(CanonicalJson, EscapesMinimallyWithLowercaseHex) {
  const std::string in = std::string("q\" b\\ \b\f\n\r\t ") + '\0' + "\x01\x1f\x7f / <>&'";
  EXPECT_EQ(canon(in), std::string("\"q\\\" b\\\\ \\b\\f\\n\\r\\t \\u0000\\u0001\\u001f\x7f / <>&'\""));
}

TEST(CanonicalJson, KeepsNonAsciiAsRawUtf8) {
  const std::string s = "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 \xe2\x80\xa8";  // incl. U+2028, not escaped
  EXPECT_EQ(canon(s), "\"" + s + "\"");
}

TEST(CanonicalJson, RefusesInvalidUtf8InValuesAndKeys) {
  const char* bad[] = {"\xff", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                       "\xf5\x80\x80\x80", "\xe2\x82", "a\x80", "\xf0\x9f\x98"};
  for (const char* s : bad) {
    EXPECT_FALSE(isValidUtf8(s)) << testing::PrintToString(s);
    EXPECT_FALSE(canonicalJson(std::string(s)).ok()) << testing::PrintToString(s);
    EXPECT_FALSE(canonicalJson(nlohmann::json{{std::string(s), 1}}).ok()) << "key " << testing::PrintToString(s);
  }
  EXPECT_TRUE(isValidUtf8("\xf4\x8f\xbf\xbf"));  // U+10FFFF, the last code point
  EXPECT_TRUE(isValidUtf8("\xee\x80\x80"));      // U+E000, just past the surrogates
}

TEST(CanonicalJson, IntegersOnlyWithinTheSafeRange) {
  EXPECT_EQ(canon(0), "0");
  EXPECT_EQ(canon(-1), "-1");
  EXPECT_EQ(canon(kMaxSafeInteger), "9007199254740991");
  EXPECT_EQ(canon(-kMaxSafeInteger), "-9007199254740991");
  EXPECT_EQ(canon(uint64_t{42}), "42");
  EXPECT_FALSE(canonicalJson(kMaxSafeInteger + 1).ok());
  EXPECT_FALSE(canonicalJson(-kMaxSafeInteger - 1).ok());
  EXPECT_FALSE(canonicalJson(uint64_t{1} << 63).ok());
}

TEST(CanonicalJson, RefusesFloatsAndNaN) {
  for (double d : {1.5, 1.0, 0.0, -0.0, 1e30, std::nan(""), double{INFINITY}}) {
    auto r = canonicalJson(nlohmann::json{{"x", d}});
    ASSERT_FALSE(r.ok()) << d;
    EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kInvalidArgument));
  }
}

TEST(CanonicalJson, RefusesBinaryAndDeepNesting) {
  EXPECT_FALSE(canonicalJson(nlohmann::json::binary({1, 2})).ok());
  nlohmann::json deep = 1;
  for (int i = 0; i <= kMaxJsonDepth; ++i) deep = nlohmann::json::array({deep});
  EXPECT_FALSE(canonicalJson(deep).ok());
}

TEST(ParseCanonicalJson, AcceptsCanonicalText) {
  const std::string text = "{\"a\":[1,-2,true,false,null,\"x\\n\\u0001\"],\"b\":{},\"\xc3\xa9\":\"\xe2\x9c\x93\"}";
  auto r = parseCanonicalJson(text);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(canon(*r), text);
}

TEST(ParseCanonicalJson, RefusesDuplicateKeys) {
  for (const char* text : {R"({"a":1,"a":1})", R"({"a":1,"a":2})", R"({"x":{"a":1,"b":2,"a":3}})"}) {
    auto r = parseCanonicalJson(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().message(), "duplicate object key") << text;
  }
  EXPECT_TRUE(parseCanonicalJson(R"({"a":{"a":1},"b":{"a":2}})").ok()) << "same key in sibling objects is fine";
}

TEST(ParseCanonicalJson, RefusesEveryNonCanonicalSpelling) {
  const char* bad[] = {
      R"({"b":1,"a":2})",    R"({ "a":1})",         R"({"a":1} )",        "{\"a\":1}\n",
      R"({"a":1.0})",        R"({"a":1e2})",        R"({"a":-0})",        R"({"a":01})",
      R"({"a":NaN})",        R"({"a":Infinity})",   R"({"a":"\u00e9"})",  R"({"a":"\u001F"})",
      R"({"a":"\/"})",       R"({"a":"\u0041"})",   R"({"a":9007199254740992})",
      R"({"a":1}{"b":2})",   R"({"a":1,})",         "",                   R"({"a":"x)",
      "{\"a\":\"\xff\"}",    "{\"a\":\"\xed\xa0\x80\"}", R"({"a":"\ud800"})",   "{\"a\":\"tab\there\"}",
  };
  for (const char* text : bad) EXPECT_FALSE(parseCanonicalJson(text).ok()) << "accepted: " << text;
}

TEST(ParseCanonicalJson, MessagesNeverEchoTheInput) {
  const std::string sentinel = "corral-sentinel-7f3a";
  for (const std::string& text : {"{\"" + sentinel + "\" 1}", "{\"a\": \"" + sentinel + "\"}", sentinel,
                                  "{\"a\":\"" + sentinel + "\",\"a\":1}"}) {
    auto r = parseCanonicalJson(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().message().find(sentinel), std::string::npos) << r.error().message();
  }
}

TEST(ParseCanonicalJson, RefusesDeepNesting) {
  std::string deep(kMaxJsonDepth + 2, '[');
  deep += std::string(kMaxJsonDepth + 2, ']');
  EXPECT_FALSE(parseCanonicalJson(deep).ok());
  std::string ok(kMaxJsonDepth, '[');
  ok += std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(parseCanonicalJson(ok).ok());
}

// A level is one array or object; scalars add none. So 32 nested containers pass whatever
// the innermost holds, and 33 fail even when the innermost is empty (before issue #19, 33
// passed when empty and failed when holding a number).
TEST(ParseCanonicalJson, NestingCountsContainersNotWhatTheInnermostHolds) {
  auto nested = [](int n, const std::string& inner) {
    return std::string(static_cast<size_t>(n), '[') + inner + std::string(static_cast<size_t>(n), ']');
  };
  for (const char* inner : {"", "1", "\"x\"", "{}"}) {
    const int n = std::string_view(inner) == "{}" ? kMaxJsonDepth - 1 : kMaxJsonDepth;
    EXPECT_TRUE(parseCanonicalJson(nested(n, inner)).ok()) << kMaxJsonDepth << " levels holding " << inner;
    EXPECT_FALSE(parseCanonicalJson(nested(n + 1, inner)).ok()) << kMaxJsonDepth + 1 << " levels holding " << inner;
  }
}

}  // namespace
}  // namespace corral::audit
