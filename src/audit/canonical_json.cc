// SPDX-License-Identifier: Apache-2.0
// Canonical JSON serializer and strict parser.
#include "audit/canonical_json.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

namespace corral::audit {
namespace {

Error invalid(std::string what) { return Error(Errc::kInvalidArgument, std::move(what)); }

// Decodes one code point at s[i] (already validated) and advances i.
char32_t nextCodePoint(std::string_view s, size_t& i) {
  auto b = static_cast<unsigned char>(s[i]);
  int extra = b < 0x80 ? 0 : b < 0xe0 ? 1 : b < 0xf0 ? 2 : 3;
  char32_t cp = extra == 0 ? b : extra == 1 ? (b & 0x1f) : extra == 2 ? (b & 0x0f) : (b & 0x07);
  for (int k = 1; k <= extra; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
  i += 1 + extra;
  return cp;
}

// RFC 8785 sorts keys by their UTF-16 code units. UTF-8 byte order already equals code point
// order; the two differ only between supplementary characters (surrogates D800-DFFF) and
// U+E000-U+FFFF, so compare the UTF-16 form rather than special-casing.
std::u16string utf16SortKey(std::string_view s) {
  std::u16string out;
  for (size_t i = 0; i < s.size();) {
    char32_t cp = nextCodePoint(s, i);
    if (cp < 0x10000) {
      out.push_back(static_cast<char16_t>(cp));
    } else {
      cp -= 0x10000;
      out.push_back(static_cast<char16_t>(0xd800 + (cp >> 10)));
      out.push_back(static_cast<char16_t>(0xdc00 + (cp & 0x3ff)));
    }
  }
  return out;
}

Result<void> appendString(std::string_view s, std::string& out) {
  if (!isValidUtf8(s)) return invalid("string is not valid UTF-8");
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xf]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
  return {};
}

Result<void> append(const nlohmann::json& v, std::string& out, int depth) {
  using T = nlohmann::json::value_t;
  // depth counts the containers around v: a container is one level more, a scalar none, so
  // the rule reads the same whatever the innermost container holds (docs/audit-format.md §1).
  if ((v.is_array() || v.is_object()) && depth >= kMaxJsonDepth)
    return invalid("more than " + std::to_string(kMaxJsonDepth) + " levels of nested arrays and objects");
  switch (v.type()) {
    case T::null: out += "null"; return {};
    case T::boolean: out += v.get<bool>() ? "true" : "false"; return {};
    case T::number_integer: {
      int64_t n = v.get<int64_t>();
      if (n > kMaxSafeInteger || n < -kMaxSafeInteger) return invalid("integer outside +-(2^53-1)");
      out += std::to_string(n);
      return {};
    }
    case T::number_unsigned: {
      uint64_t n = v.get<uint64_t>();
      if (n > static_cast<uint64_t>(kMaxSafeInteger)) return invalid("integer outside +-(2^53-1)");
      out += std::to_string(n);
      return {};
    }
    case T::number_float: return invalid("non-integer number (floats, NaN and exponents are refused)");
    case T::string: return appendString(v.get_ref<const std::string&>(), out);
    case T::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& e : v) {
        if (!first) out.push_back(',');
        first = false;
        RETURN_IF_ERROR(append(e, out, depth + 1));
      }
      out.push_back(']');
      return {};
    }
    case T::object: {
      std::vector<std::pair<std::u16string, nlohmann::json::const_iterator>> items;
      items.reserve(v.size());
      for (auto it = v.cbegin(); it != v.cend(); ++it) {
        if (!isValidUtf8(it.key())) return invalid("object key is not valid UTF-8");
        items.emplace_back(utf16SortKey(it.key()), it);
      }
      std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      out.push_back('{');
      bool first = true;
      for (const auto& [key, it] : items) {
        if (!first) out.push_back(',');
        first = false;
        RETURN_IF_ERROR(appendString(it.key(), out));
        out.push_back(':');
        RETURN_IF_ERROR(append(*it, out, depth + 1));
      }
      out.push_back('}');
      return {};
    }
    case T::binary:
    case T::discarded: break;
  }
  return invalid("value has no JSON form");
}

}  // namespace

bool isValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    int extra;
    unsigned char lo = 0x80, hi = 0xbf;  // bounds of the second byte (RFC 3629 table)
    if (b >= 0xc2 && b <= 0xdf) extra = 1;
    else if (b == 0xe0) extra = 2, lo = 0xa0;
    else if ((b >= 0xe1 && b <= 0xec) || b == 0xee || b == 0xef) extra = 2;
    else if (b == 0xed) extra = 2, hi = 0x9f;  // no UTF-16 surrogates
    else if (b == 0xf0) extra = 3, lo = 0x90;
    else if (b >= 0xf1 && b <= 0xf3) extra = 3;
    else if (b == 0xf4) extra = 3, hi = 0x8f;  // nothing past U+10FFFF
    else return false;
    if (s.size() - i <= static_cast<size_t>(extra)) return false;  // truncated sequence
    auto c1 = static_cast<unsigned char>(s[i + 1]);
    if (c1 < lo || c1 > hi) return false;
    for (int k = 2; k <= extra; ++k) {
      auto c = static_cast<unsigned char>(s[i + k]);
      if (c < 0x80 || c > 0xbf) return false;
    }
    i += 1 + extra;
  }
  return true;
}

Result<std::string> canonicalJson(const nlohmann::json& value) {
  std::string out;
  RETURN_IF_ERROR(append(value, out, 0));
  return out;
}

Result<nlohmann::json> parseJsonChecked(std::string_view text, int max_depth, bool refuse_duplicates) {
  std::vector<std::set<std::string>> open_objects;  // the keys seen, per open object
  bool duplicate = false;
  bool too_deep = false;
  auto callback = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (depth > max_depth) too_deep = true;
    if (!refuse_duplicates) return true;
    if (event == E::object_start) open_objects.emplace_back();
    else if (event == E::object_end && !open_objects.empty()) open_objects.pop_back();
    else if (event == E::key && !open_objects.empty() && parsed.is_string() &&
             !open_objects.back().insert(parsed.get_ref<const std::string&>()).second)
      duplicate = true;
    return true;
  };
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() quotes the input ("last read: ..."); only the offset leaves this function.
    return invalid("invalid JSON at byte " + std::to_string(e.byte));
  } catch (const nlohmann::json::exception&) {
    return invalid("invalid JSON");
  }
  if (duplicate) return invalid("duplicate object key");
  if (too_deep) return invalid("nested deeper than " + std::to_string(max_depth));
  return parsed;
}

Result<nlohmann::json> parseCanonicalJson(std::string_view text) {
  ASSIGN_OR_RETURN(nlohmann::json parsed, parseJsonChecked(text, kMaxJsonDepth, /*refuse_duplicates=*/true));
  ASSIGN_OR_RETURN(std::string canonical, canonicalJson(parsed));
  if (canonical != text) {
    size_t at = 0;
    while (at < canonical.size() && at < text.size() && canonical[at] == text[at]) ++at;
    return invalid("not in canonical form (first difference at byte " + std::to_string(at) + ")");
  }
  return parsed;
}

}  // namespace corral::audit
