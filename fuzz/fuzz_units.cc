// SPDX-License-Identifier: Apache-2.0
// Fuzzes parseSize, parseDuration, parseCount and printable against reference implementations.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "check.h"
#include "policy/units.h"

namespace corral::fuzz {
namespace {

using u128 = unsigned __int128;
constexpr u128 kSaturated = u128{1} << 100;  // "too big for anything below"

// Leading ASCII digits as a saturating 128-bit value; returns how many were consumed.
size_t refDigits(std::string_view s, u128* out) {
  u128 v = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    v = v * 10 + static_cast<unsigned>(s[i] - '0');
    if (v > kSaturated) v = kSaturated;
  }
  *out = v;
  return i;
}

std::string upper(std::string_view s) {
  std::string u(s);
  for (char& c : u)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return u;
}

// The documented grammar of sizes, written independently of units.cc.
bool refSize(std::string_view text, uint64_t* out) {
  u128 n = 0;
  size_t used = refDigits(text, &n);
  if (used == 0) return false;
  std::string unit = upper(text.substr(used));
  int shift = -1;
  if (unit.empty() || unit == "B") shift = 0;
  for (auto [letter, s] : {std::pair{'K', 10}, {'M', 20}, {'G', 30}, {'T', 40}}) {
    std::string one(1, letter);
    if (unit == one || unit == one + "B" || unit == one + "IB") shift = s;
  }
  if (shift < 0) return false;
  if (n == 0 || n > std::numeric_limits<uint64_t>::max()) return false;
  u128 bytes = n << shift;  // n < 2^64 and shift <= 40: no 128-bit overflow
  if (bytes > std::numeric_limits<uint64_t>::max()) return false;
  *out = static_cast<uint64_t>(bytes);
  return true;
}

constexpr uint64_t kYearMs = 366ull * 24 * 3'600'000;

bool refDuration(std::string_view text, uint64_t* out) {
  u128 whole = 0;
  size_t used = refDigits(text, &whole);
  if (used == 0) return false;
  std::string_view rest = text.substr(used);
  u128 frac = 0, scale = 1;
  if (!rest.empty() && rest[0] == '.') {
    size_t f = refDigits(rest.substr(1), &frac);
    if (f == 0 || f > 3) return false;
    for (size_t i = 0; i < f; ++i) scale *= 10;
    rest.remove_prefix(1 + f);
  }
  u128 unit = 0;
  if (rest == "ms") unit = 1;
  else if (rest.empty() || rest == "s") unit = 1000;
  else if (rest == "m") unit = 60'000;
  else if (rest == "h") unit = 3'600'000;
  else return false;
  if (whole > kSaturated / 4'000'000) return false;
  // Sub-millisecond fractions are truncated ("1.5ms" is 1 ms), as units.cc documents by example.
  u128 ms = whole * unit + frac * unit / scale;
  if (ms == 0 || ms > kYearMs) return false;
  *out = static_cast<uint64_t>(ms);
  return true;
}

bool refCount(std::string_view text, uint64_t max, uint64_t* out) {
  u128 n = 0;
  size_t used = refDigits(text, &n);
  if (used == 0 || used != text.size() || n == 0 || n > max) return false;
  *out = static_cast<uint64_t>(n);
  return true;
}

// The canonical spelling a report or --help would print: the largest exact binary unit.
std::string formatSize(uint64_t bytes) {
  for (auto [shift, unit] : {std::pair{40, 'T'}, {30, 'G'}, {20, 'M'}, {10, 'K'}})
    if (bytes % (1ull << shift) == 0) return std::to_string(bytes >> shift) + unit;
  return std::to_string(bytes);
}

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  fail(__FILE__, __LINE__, "printable() wrote a bad \\x escape", std::string(1, c));
}

// Inverse of printable() for text it did not cut.
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      out += s[i];
      continue;
    }
    char k = s[++i];
    if (k == 'n') out += '\n';
    else if (k == 't') out += '\t';
    else if (k == '\\') out += '\\';
    else if (k == 'x' && i + 2 < s.size()) {
      out += static_cast<char>(hexDigit(s[i + 1]) * 16 + hexDigit(s[i + 2]));
      i += 2;
    } else {
      out += '\\';
      out += k;
    }
  }
  return out;
}

void checkSize(std::string_view text) {
  auto r = policy::parseSize(text);
  PROPERTY_ONE_LINE_ERROR(r);
  uint64_t want = 0;
  bool ref = refSize(text, &want);
  PROPERTY(r.ok() == ref, "parseSize and the reference disagree on '" + std::string(text) + "'");
  if (!r.ok()) return;
  PROPERTY(*r > 0, std::string(text));
  PROPERTY(*r == want, std::string(text) + " -> " + std::to_string(*r) + ", reference " + std::to_string(want));
  for (const std::string& again : {formatSize(*r), std::to_string(*r)}) {
    auto back = policy::parseSize(again);
    PROPERTY(back.ok() && *back == *r, "size round trip " + std::string(text) + " -> " + again);
  }
}

void checkDuration(std::string_view text) {
  auto r = policy::parseDuration(text);
  PROPERTY_ONE_LINE_ERROR(r);
  uint64_t want = 0;
  bool ref = refDuration(text, &want);
  PROPERTY(r.ok() == ref, "parseDuration and the reference disagree on '" + std::string(text) + "'");
  if (!r.ok()) return;
  auto ms = static_cast<uint64_t>(r->count());
  PROPERTY(r->count() > 0 && ms <= kYearMs, std::string(text));
  PROPERTY(ms == want, std::string(text) + " -> " + std::to_string(ms) + "ms, reference " + std::to_string(want));
  auto back = policy::parseDuration(std::to_string(ms) + "ms");
  PROPERTY(back.ok() && *back == *r, "duration round trip " + std::string(text));
}

void checkCount(std::string_view text) {
  for (uint64_t max : {uint64_t{1}, uint64_t{10}, uint64_t{1} << 20, std::numeric_limits<uint64_t>::max()}) {
    auto r = policy::parseCount(text, max);
    PROPERTY_ONE_LINE_ERROR(r);
    uint64_t want = 0;
    bool ref = refCount(text, max, &want);
    PROPERTY(r.ok() == ref, "parseCount and the reference disagree on '" + std::string(text) + "'");
    if (!r.ok()) continue;
    PROPERTY(*r == want && *r >= 1 && *r <= max, std::string(text));
    auto back = policy::parseCount(std::to_string(*r), max);
    PROPERTY(back.ok() && *back == *r, "count round trip " + std::string(text));
  }
}

void checkPrintable(std::string_view text) {
  std::string shown = policy::printable(text);
  PROPERTY(noControlBytes(shown), shown);
  constexpr size_t kShown = 120;
  if (text.size() <= kShown) {
    PROPERTY(unescape(shown) == text, "printable() lost information: " + shown);
    return;
  }
  PROPERTY(shown.size() >= 3 && shown.substr(shown.size() - 3) == "...", shown);
  std::string body = unescape(shown.substr(0, shown.size() - 3));
  PROPERTY(text.substr(0, body.size()) == body, "cut text is not a prefix of the input: " + shown);
  // "Cut to about 120 bytes": backing off to a UTF-8 boundary drops at most one partial
  // character (3 bytes); dropping more hides the input the message is about.
  PROPERTY(body.size() + 3 >= kShown, "cut to " + std::to_string(body.size()) + " bytes: '" + shown + "'");
}

// oneLine: whatever the input, the output is valid UTF-8 without C0/DEL, C1, line or
// paragraph separators or bidi controls (decoded independently here); printable ASCII
// input comes back unchanged; the length stays bounded.
void checkOneLine(std::string_view text) {
  const std::string out = policy::oneLine(text);
  PROPERTY(out.size() <= 4 * 2000 * 4 + 3, "oneLine output too long: " + std::to_string(out.size()));
  size_t i = 0;
  while (i < out.size()) {
    const auto b = static_cast<unsigned char>(out[i]);
    size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    PROPERTY(n != 0 && i + n <= out.size(), "oneLine output is not UTF-8 at byte " + std::to_string(i));
    uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(out[i + k]);
      PROPERTY((c & 0xC0) == 0x80, "oneLine output is not UTF-8 at byte " + std::to_string(i + k));
      cp = (cp << 6) | (c & 0x3F);
    }
    PROPERTY(!(cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
               (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200E || cp == 0x200F ||
               cp == 0x061C),
             "oneLine let a steering code point through: " + std::to_string(cp));
    i += n;
  }
  bool plain = text.size() <= 2000;
  for (char c : text) plain = plain && c >= 0x20 && c < 0x7F;
  if (plain) PROPERTY(out == text, "oneLine changed printable ASCII");
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  corral::fuzz::checkSize(text);
  corral::fuzz::checkDuration(text);
  corral::fuzz::checkCount(text);
  corral::fuzz::checkPrintable(text);
  corral::fuzz::checkOneLine(text);
  return 0;
}
