// SPDX-License-Identifier: Apache-2.0
// Tests for size, duration and count parsing and for message-safe echoing of input.
#include "policy/units.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace corral::policy {
namespace {

using std::chrono::milliseconds;

TEST(ParseSize, AcceptsSuffixesAsBinaryMultiples) {
  const std::pair<const char*, uint64_t> cases[] = {
      {"1", 1},          {"512", 512},           {"1B", 1},
      {"512K", 512ull << 10}, {"64M", 64ull << 20}, {"2G", 2ull << 30},
      {"3T", 3ull << 40}, {"1k", 1024},          {"1KB", 1024},
      {"1KiB", 1024},    {"1mib", 1ull << 20},   {"007", 7},
      {"18446744073709551615", std::numeric_limits<uint64_t>::max()},
      {"16777215T", 16777215ull << 40},
  };
  for (const auto& [text, want] : cases) {
    auto r = parseSize(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.error().message();
    EXPECT_EQ(*r, want) << text;
  }
}

TEST(ParseSize, RefusesZeroSignsSpacesJunkAndOverflow) {
  const char* bad[] = {"", "0", "0K", "-1", "+1", " 1", "1 ", "1 K", "K", "1Q", "1KK", "1.5G", "1e9",
                       "0x10", "18446744073709551616", "16777216T", "99999999999999999999999M"};
  for (const char* text : bad) EXPECT_FALSE(parseSize(text).ok()) << "'" << text << "' was accepted";
}

TEST(ParseSize, MessageQuotesTheInputAndGivesExamples) {
  auto r = parseSize("12Q");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kInvalidArgument));
  EXPECT_EQ(r.error().message(), "'12Q' is not a size (e.g. 512K, 64M, 2G)");
}

TEST(ParseDuration, AcceptsUnitsAndFractions) {
  const std::pair<const char*, int64_t> cases[] = {
      {"250ms", 250}, {"1", 1000},      {"10s", 10'000},  {"1.5s", 1500},   {"1.5", 1500},
      {"0.25s", 250}, {"0.001s", 1},    {"2m", 120'000},  {"1.5m", 90'000}, {"1h", 3'600'000},
      {"8784h", 8784ll * 3'600'000},  // 366 days: the ceiling itself
  };
  for (const auto& [text, want] : cases) {
    auto r = parseDuration(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.error().message();
    EXPECT_EQ(*r, milliseconds(want)) << text;
  }
}

TEST(ParseDuration, RefusesZeroNegativeJunkAndPastAYear) {
  const char* bad[] = {"", "0", "0s", "0.0001s", "0.0004", "0.5ms", "-1s", "+1s", " 1s", "1s ", "1 s",
                       "s",  ".5s", "1.", "1.s", "1.0001s", "1d", "1S", "1sec", "1e3", "8785h",
                       "31622400001ms", "99999999999999999999999"};
  for (const char* text : bad) EXPECT_FALSE(parseDuration(text).ok()) << "'" << text << "' was accepted";
}

TEST(ParseDuration, MessageQuotesTheInput) {
  EXPECT_EQ(parseDuration("soon").error().message(), "'soon' is not a duration (e.g. 250ms, 10s, 5m)");
  EXPECT_EQ(parseDuration("10000h").error().message(), "'10000h' is not a duration of at most 366 days (8784h)");
  EXPECT_TRUE(parseDuration("8784h").ok());
  EXPECT_EQ(parseDuration("99999999999999999999s").error().message(),
            "'99999999999999999999s' is not a duration of at most 366 days (8784h)");
}

TEST(ParseCount, AcceptsOneToMax) {
  EXPECT_EQ(*parseCount("1", 10), 1u);
  EXPECT_EQ(*parseCount("10", 10), 10u);
  EXPECT_EQ(*parseCount("1048576", 1u << 20), 1u << 20);
}

TEST(ParseCount, RefusesZeroAboveMaxSuffixSignsAndOverflow) {
  const char* bad[] = {"", "0", "11", "-1", "+1", "1K", " 1", "1 ", "1.0", "99999999999999999999999"};
  for (const char* text : bad) EXPECT_FALSE(parseCount(text, 10).ok()) << "'" << text << "' was accepted";
  EXPECT_EQ(parseCount("11", 10).error().message(), "'11' is not a count from 1 to 10");
}

TEST(Printable, EscapesControlBytesSoMessagesStayOneLine) {
  EXPECT_EQ(printable("plain/path"), "plain/path");
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable("a\nb\tc\rd\x7f"), "a\\nb\\tc\\x0dd\\x7f");
  EXPECT_EQ(printable("back\\slash"), "back\\\\slash");
  EXPECT_EQ(printable("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 passes through
}

TEST(Printable, CutsLongInput) {
  std::string shown = printable(std::string(10'000, 'x'));
  EXPECT_LT(shown.size(), 200u);
  EXPECT_EQ(shown.substr(shown.size() - 3), "...");
}

TEST(Printable, CutDoesNotSplitAUtf8Character) {
  std::string text(119, 'x');
  for (int i = 0; i < 10; ++i) text += "\xc3\xa9";
  std::string shown = printable(text);
  std::string body = shown.substr(0, shown.size() - 3);
  ASSERT_FALSE(body.empty());
  EXPECT_NE(static_cast<unsigned char>(body.back()) & 0xC0, 0xC0) << "ends on a lead byte";
  EXPECT_EQ(body.find("\xc3", 119), std::string::npos) << "kept half of a two-byte character";
}

TEST(ParseSize, HostileInputEchoedOnOneLine) {
  auto r = parseSize("1\nforged line");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().find('\n'), std::string::npos) << r.error().message();
}

TEST(Printable, CutKeepsInvalidUtf8InsteadOfErasingIt) {
  // Regression (fuzz/regressions/units): 121 continuation bytes used to echo as "...".
  std::string shown = printable(std::string(121, '\x80'));
  EXPECT_GT(shown.size(), 100u) << "the cut erased the echoed value";
  std::string mixed = "token=abcdef" + std::string(200, '\xbf');
  EXPECT_NE(printable(mixed).find("token=abcdef"), std::string::npos);
  EXPECT_GT(printable(mixed).size(), 100u);
}

TEST(OneLine, EscapesWhatCouldStartALineOrSteerATerminal) {
  EXPECT_EQ(oneLine("plain /path/ok \xc3\xa9"), "plain /path/ok \xc3\xa9");            // UTF-8 passes
  EXPECT_EQ(oneLine("a\nb\x1b[2J\x7f"), "a\\x0ab\\x1b[2J\\x7f");                 // C0 and DEL
  EXPECT_EQ(oneLine("\xc2\x9b" "31m"), "\\u{009b}31m");                                // C1 CSI
  EXPECT_EQ(oneLine("x\x9by"), "x\\x9by");                                            // a stray byte
  EXPECT_EQ(oneLine("\xe2\x80\xa8\xe2\x80\xae"), "\\u{2028}\\u{202e}");          // LS, RLO
  EXPECT_EQ(oneLine("\xed\xa0\x80"), "\\xed\\xa0\\x80");                          // a surrogate
  EXPECT_EQ(oneLine("\xc0\xaf"), "\\xc0\\xaf");                                      // overlong '/'
  const std::string long_text(2500, 'a');
  EXPECT_EQ(oneLine(long_text), std::string(2000, 'a') + "...");
}

}  // namespace
}  // namespace corral::policy
