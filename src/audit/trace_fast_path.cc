// SPDX-License-Identifier: Apache-2.0
#include "audit/trace_fast_path.h"

#include <array>

#include "audit/canonical_json.h"
#include "base/sha256.h"
#include "audit/trace_chain.h"

namespace corral::audit {
namespace {

// A cursor over the line; every parse function returns false on anything it cannot prove.
struct Cursor {
  std::string_view s;
  size_t i = 0;
  bool eat(char c) {
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  bool eat(std::string_view lit) {
    if (s.substr(i, lit.size()) != lit) return false;
    i += lit.size();
    return true;
  }
};

bool isHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// Bytes a string can hold as they are and that need no further look: printable ASCII except
// the quote and the backslash. Strings are most of a trace line, so they are skipped a
// table lookup per byte at a time rather than four comparisons.
constexpr auto kPlainStringByte = [] {
  std::array<bool, 256> t{};
  for (int b = 0x20; b < 0x80; ++b) t[static_cast<size_t>(b)] = b != '"' && b != '\\';
  return t;
}();

// A canonical string; out receives the raw bytes between the quotes. Rejects what the
// canonical writer would not produce, and strings whose raw form exceeds max_raw.
bool string(Cursor& c, std::string_view* out, size_t max_raw, bool plain_ascii_only) {
  if (!c.eat('"')) return false;
  const size_t start = c.i;
  bool ascii = true;
  while (c.i < c.s.size()) {
    const auto b = static_cast<unsigned char>(c.s[c.i]);
    if (kPlainStringByte[b]) {
      ++c.i;
      continue;
    }
    if (b == '"') break;
    if (b < 0x20) return false;
    if (b == '\\') {
      if (plain_ascii_only || c.i + 1 >= c.s.size()) return false;
      const char e = c.s[c.i + 1];
      if (e == '"' || e == '\\' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
        c.i += 2;
      } else if (e == 'u') {
        // Canonical only for the other C0 controls: \u0000-\u001f in lowercase hex.
        if (c.i + 6 > c.s.size() || c.s.substr(c.i + 2, 2) != "00") return false;
        const char hi = c.s[c.i + 4];
        const char lo = c.s[c.i + 5];
        if ((hi != '0' && hi != '1') || !isHex(lo)) return false;
        const int v = (hi - '0') * 16 + (lo >= 'a' ? lo - 'a' + 10 : lo - '0');
        if (v == '\b' || v == '\f' || v == '\n' || v == '\r' || v == '\t') return false;
        c.i += 6;
      } else {
        return false;
      }
      continue;
    }
    if (b >= 0x80) ascii = false;
    ++c.i;
  }
  if (c.i >= c.s.size()) return false;
  const std::string_view raw = c.s.substr(start, c.i - start);
  ++c.i;  // closing quote
  if (raw.size() > max_raw) return false;
  if (!ascii && (plain_ascii_only || !isValidUtf8(raw))) return false;
  if (out) *out = raw;
  return true;
}

bool integer(Cursor& c, int64_t* out) {
  const size_t start = c.i;
  const bool neg = c.eat('-');
  if (c.i >= c.s.size() || c.s[c.i] < '0' || c.s[c.i] > '9') return false;
  if (c.s[c.i] == '0') {
    ++c.i;
    if (neg) return false;  // "-0" is not canonical
  } else {
    while (c.i < c.s.size() && c.s[c.i] >= '0' && c.s[c.i] <= '9') ++c.i;
  }
  if (c.i - start > 17) return false;  // beyond 2^53 digits: let the slow path judge
  if (c.i < c.s.size() && (c.s[c.i] == '.' || c.s[c.i] == 'e' || c.s[c.i] == 'E')) return false;
  int64_t v = 0;
  for (size_t k = start + (neg ? 1 : 0); k < c.i; ++k) v = v * 10 + (c.s[k] - '0');
  if (v > kMaxSafeInteger) return false;
  if (out) *out = neg ? -v : v;
  return true;
}

bool value(Cursor& c, int depth);

bool object(Cursor& c, int depth) {
  if (depth > kMaxJsonDepth - 2 || !c.eat('{')) return false;
  if (c.eat('}')) return true;
  std::string_view prev_key;
  bool first = true;
  do {
    std::string_view key;
    // Keys: plain ASCII only, so byte order is the canonical (UTF-16) order.
    if (!string(c, &key, kMaxTraceStringBytes, true)) return false;
    if (!first && !(prev_key < key)) return false;  // strictly increasing: sorted, no duplicates
    first = false;
    prev_key = key;
    if (!c.eat(':') || !value(c, depth + 1)) return false;
  } while (c.eat(','));
  return c.eat('}');
}

bool array(Cursor& c, int depth) {
  if (depth > kMaxJsonDepth - 2 || !c.eat('[')) return false;
  if (c.eat(']')) return true;
  do {
    if (!value(c, depth + 1)) return false;
  } while (c.eat(','));
  return c.eat(']');
}

bool value(Cursor& c, int depth) {
  // Two levels short of the writer's limit: the slow path counts depth its own way.
  if (c.i >= c.s.size() || depth > kMaxJsonDepth - 2) return false;
  switch (c.s[c.i]) {
    case '{': return object(c, depth);
    case '[': return array(c, depth);
    case '"': return string(c, nullptr, kMaxTraceStringBytes, false);
    case 't': return c.eat("true");
    case 'f': return c.eat("false");
    case 'n': return c.eat("null");
    default: return integer(c, nullptr);
  }
}

}  // namespace

std::optional<FastTraceHeader> fastTraceLine(std::string_view line) {
  Cursor c{line};
  FastTraceHeader h;
  std::string_view type;
  int64_t seq = 0;
  int64_t ts = 0;
  // The data object sits at depth 1 of the entry, as the slow path counts it.
  if (!c.eat("{\"data\":") || c.i >= line.size() || line[c.i] != '{' || !object(c, 1)) return std::nullopt;
  if (!c.eat(",\"prev\":\"") || c.i + 64 > line.size()) return std::nullopt;
  h.prev = line.substr(c.i, 64);
  if (!isSha256Hex(h.prev)) return std::nullopt;
  c.i += 64;
  if (!c.eat("\",\"seq\":") || !integer(c, &seq) || seq < 0) return std::nullopt;
  if (!c.eat(",\"ts_ms\":") || !integer(c, &ts) || ts < 0) return std::nullopt;
  if (!c.eat(",\"type\":") || !string(c, &type, 32, true) || !isTraceType(type)) return std::nullopt;
  if (!c.eat(",\"v\":1}") || c.i != line.size()) return std::nullopt;
  h.seq = static_cast<uint64_t>(seq);
  return h;
}

}  // namespace corral::audit
