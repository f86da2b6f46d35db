// SPDX-License-Identifier: Apache-2.0
// Size, duration and count parsing.
#include "policy/units.h"

#include <cctype>
#include <cstdio>
#include <limits>
#include <string>

namespace corral::policy {
namespace {

Error bad(std::string_view text, const char* what) {
  return Error(Errc::kInvalidArgument, "'" + printable(text) + "' is not " + what);
}

// Parses leading digits; returns the count consumed, 0 on none or overflow.
size_t parseDigits(std::string_view s, uint64_t* out) {
  uint64_t v = 0;
  size_t i = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
    unsigned d = static_cast<unsigned>(s[i] - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return 0;
    v = v * 10 + d;
  }
  *out = v;
  return i;
}

}  // namespace

Result<uint64_t> parseSize(std::string_view text) {
  constexpr const char* kWhat = "a size (e.g. 512K, 64M, 2G)";
  uint64_t n = 0;
  size_t used = parseDigits(text, &n);
  if (used == 0 || n == 0) return bad(text, kWhat);
  std::string unit;
  for (char c : text.substr(used)) unit += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = -1;
  if (unit.empty() || unit == "B") shift = 0;
  else if (unit == "K" || unit == "KB" || unit == "KIB") shift = 10;
  else if (unit == "M" || unit == "MB" || unit == "MIB") shift = 20;
  else if (unit == "G" || unit == "GB" || unit == "GIB") shift = 30;
  else if (unit == "T" || unit == "TB" || unit == "TIB") shift = 40;
  if (shift < 0) return bad(text, kWhat);
  if (shift > 0 && n > (std::numeric_limits<uint64_t>::max() >> shift)) return bad(text, kWhat);
  return n << shift;
}

Result<std::chrono::milliseconds> parseDuration(std::string_view text) {
  constexpr const char* kWhat = "a duration (e.g. 250ms, 10s, 5m)";
  constexpr const char* kTooLong = "a duration of at most 366 days (8784h)";
  uint64_t whole = 0;
  size_t used = parseDigits(text, &whole);
  // No digits parsed from text that starts with one: more than 2^64 of them.
  if (used == 0) return bad(text, !text.empty() && std::isdigit(static_cast<unsigned char>(text[0])) ? kTooLong : kWhat);
  // Up to three fractional digits: enough for milliseconds of a second.
  uint64_t frac = 0, frac_scale = 1;
  std::string_view rest = text.substr(used);
  if (!rest.empty() && rest[0] == '.') {
    rest.remove_prefix(1);
    size_t f = 0;
    while (f < rest.size() && std::isdigit(static_cast<unsigned char>(rest[f]))) {
      if (f >= 3) return bad(text, kWhat);
      frac = frac * 10 + static_cast<uint64_t>(rest[f] - '0');
      frac_scale *= 10;
      ++f;
    }
    if (f == 0) return bad(text, kWhat);
    rest.remove_prefix(f);
  }
  uint64_t unit_ms = 0;
  if (rest == "ms") unit_ms = 1;
  else if (rest.empty() || rest == "s") unit_ms = 1000;
  else if (rest == "m") unit_ms = 60'000;
  else if (rest == "h") unit_ms = 3'600'000;
  else return bad(text, kWhat);
  constexpr uint64_t kMaxMs = 366ull * 24 * 3'600'000;
  if (whole > kMaxMs / unit_ms) return bad(text, kTooLong);
  uint64_t ms = whole * unit_ms + frac * unit_ms / frac_scale;
  if (ms > kMaxMs) return bad(text, kTooLong);
  if (ms == 0) return bad(text, kWhat);
  return std::chrono::milliseconds(ms);
}

Result<uint64_t> parseCount(std::string_view text, uint64_t max) {
  uint64_t n = 0;
  size_t used = parseDigits(text, &n);
  if (used == 0 || used != text.size() || n == 0 || n > max)
    return Error(Errc::kInvalidArgument,
                 "'" + printable(text) + "' is not a count from 1 to " + std::to_string(max));
  return n;
}

std::string printable(std::string_view text) {
  constexpr size_t kMaxShown = 120;
  bool cut = text.size() > kMaxShown;
  if (cut) {
    text = text.substr(0, kMaxShown);
    // Drop a character the cut left incomplete: its lead byte and at most 3 continuation
    // bytes. Anything else stays, valid UTF-8 or not: an unbounded back-off would let a run
    // of 0x80 bytes erase the whole echoed value (found by fuzz/fuzz_units.cc).
    size_t cont = 0;
    while (cont < 3 && cont < text.size() &&
           (static_cast<unsigned char>(text[text.size() - 1 - cont]) & 0xC0) == 0x80)
      ++cont;
    if (cont < text.size()) {
      auto lead = static_cast<unsigned char>(text[text.size() - 1 - cont]);
      size_t need = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
      if (need > cont) text.remove_suffix(cont + 1);
    }
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 3);
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  if (cut) out += "...";
  return out;
}

std::string oneLine(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  constexpr size_t kMax = 2000;
  const bool cut = text.size() > kMax;
  if (cut) text = text.substr(0, kMax);
  std::string out;
  auto hexByte = [&](unsigned char u) {
    out += "\\x";
    out += kHex[u >> 4];
    out += kHex[u & 0xf];
  };
  for (size_t i = 0; i < text.size();) {
    const auto u = static_cast<unsigned char>(text[i]);
    if (u < 0x80) {
      if (u < 0x20 || u == 0x7f) hexByte(u);
      else out += static_cast<char>(u);
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence (shortest form, no surrogates), or the lead byte escaped.
    const size_t len = u >= 0xF0 && u <= 0xF4 ? 4 : u >= 0xE0 ? (u <= 0xEF ? 3 : 0) : u >= 0xC2 ? 2 : 0;
    uint32_t cp = len == 2 ? (u & 0x1F) : len == 3 ? (u & 0x0F) : (u & 0x07);
    bool ok = len != 0 && i + len <= text.size();
    for (size_t k = 1; ok && k < len; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      ok = (c & 0xC0) == 0x80;
      cp = (cp << 6) | (c & 0x3F);
    }
    ok = ok && !(len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) && !(len == 4 && (cp < 0x10000 || cp > 0x10FFFF));
    if (!ok) {
      hexByte(u);
      ++i;
      continue;
    }
    const bool steering = (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0x061C || cp == 0x200E ||
                          cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
    if (steering) {
      char buf[16];
      std::snprintf(buf, sizeof(buf), "\\u{%04x}", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  if (cut) out += "...";
  return out;
}

}  // namespace corral::policy
