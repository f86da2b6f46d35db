// SPDX-License-Identifier: Apache-2.0
// Strict JSON for manifests and spawn scopes: a SAX handler that refuses duplicate keys and
// deep nesting, and error text that names a JSON path without echoing long or raw input.
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "policy/manifest_fields.h"

namespace corral::policy::manifest_fields {
namespace {

bool plainKey(std::string_view k) {
  if (k.empty() || k.size() > kMaxShown) return false;
  for (char c : k)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  return true;
}

// nlohmann's parse_error text is "...: syntax error while parsing X - REASON; last read:
// 'TOKEN'; expected Y". Only REASON and "expected Y" are fixed text; TOKEN is raw input and
// is dropped.
std::string reasonOf(const std::exception& ex) {
  std::string_view what = ex.what();
  size_t dash = what.find(" - ");
  if (dash == std::string_view::npos) return "syntax error";
  what.remove_prefix(dash + 3);
  std::string_view reason = what;
  std::string_view expected;
  if (size_t lr = what.find("; last read: "); lr != std::string_view::npos) {
    reason = what.substr(0, lr);
    size_t ex_at = what.rfind("; expected ");
    if (ex_at != std::string_view::npos && ex_at > lr) expected = what.substr(ex_at);
  }
  std::string out;
  for (char c : std::string(reason) + std::string(expected)) {
    auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  if (out.size() > 160) {
    out.resize(160);
    out += "...";
  }
  return out;
}

// Builds the DOM like nlohmann's own SAX DOM parser, plus the checks it lacks. Returning
// false from any event stops the parse at once.
class StrictSax {
 public:
  explicit StrictSax(std::string_view doc) : doc_(doc) {}

  bool null() { return put(Json(nullptr)); }
  bool boolean(bool v) { return put(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return put(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(Json(v)); }
  bool number_float(Json::number_float_t v, const Json::string_t&) { return put(Json(v)); }
  bool string(Json::string_t& v) { return put(Json(std::move(v))); }
  bool binary(Json::binary_t&) { return fail(here(), "binary values are not JSON text"); }

  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(Json::string_t& k) {
    Frame& f = frames_.back();
    f.key = k;
    f.has_key = true;
    if (!f.keys.insert(k).second) return fail(here(), "duplicate key (each field may appear once)");
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    return fail(here(), "invalid JSON at byte " + std::to_string(position) + ": " + reasonOf(ex));
  }

  std::optional<Error>& error() { return error_; }
  Json& root() { return root_; }

 private:
  struct Frame {
    Json* node;
    std::string key;  // the object key whose value comes next
    bool has_key = false;
    std::set<std::string, std::less<>> keys;
  };

  Where here() const {
    // Outer frames hold the open container as their last element or under their last key;
    // the innermost frame is between values.
    Where w{doc_, ""};
    for (size_t i = 0; i < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      bool inner = i + 1 == frames_.size();
      if (f.node->is_array()) w = w.at(inner ? f.node->size() : f.node->size() - 1);
      else if (!inner || f.has_key) w = w.key(f.key);
    }
    return w;
  }

  bool fail(const Where& w, const std::string& rule) {
    if (!error_) error_ = w.error(rule);
    return false;
  }

  // Places v where the parser is and returns where it went.
  Json* place(Json v) {
    if (frames_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Frame& f = frames_.back();
    if (f.node->is_array()) {
      f.node->push_back(std::move(v));
      return &f.node->back();
    }
    f.has_key = false;
    Json& slot = (*f.node)[f.key];
    slot = std::move(v);
    return &slot;
  }

  bool put(Json v) {
    place(std::move(v));
    return true;
  }

  bool open(Json container) {
    if (frames_.size() >= static_cast<size_t>(kMaxDepth))
      return fail(here(), "nested deeper than " + std::to_string(kMaxDepth) + " levels");
    // Invariant: a parent array grows only after this frame is closed, so the pointer to
    // its last element stays valid while this container fills.
    Json* node = place(std::move(container));
    frames_.push_back(Frame{node, "", false, {}});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  std::string_view doc_;
  std::vector<Frame> frames_;
  Json root_;
  std::optional<Error> error_;
};

}  // namespace

Where Where::key(std::string_view k) const {
  std::string seg = plainKey(k) ? std::string(k) : shown(k);
  return Where{doc, path.empty() ? seg : path + "." + seg};
}

Where Where::at(size_t index) const { return Where{doc, path + "[" + std::to_string(index) + "]"}; }

Error Where::error(const std::string& rule, Errc code) const {
  return Error(code, std::string(doc) + ": " + (path.empty() ? "$" : path) + ": " + rule);
}

std::string shown(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  bool cut = text.size() > kMaxShown;
  if (cut) text = text.substr(0, kMaxShown);
  std::string out = "'";
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\' && c != '\'') {
      out += c;
    } else {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    }
  }
  out += cut ? "'..." : "'";
  return out;
}

bool validUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    auto b = static_cast<unsigned char>(s[i]);
    size_t extra;
    unsigned char lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
    if (b < 0x80) extra = 0;
    else if (b >= 0xc2 && b <= 0xdf) extra = 1;
    else if (b == 0xe0) extra = 2, lo = 0xa0;            // no overlong forms
    else if (b == 0xed) extra = 2, hi = 0x9f;            // no UTF-16 surrogates
    else if (b >= 0xe1 && b <= 0xef) extra = 2;
    else if (b == 0xf0) extra = 3, lo = 0x90;
    else if (b >= 0xf1 && b <= 0xf3) extra = 3;
    else if (b == 0xf4) extra = 3, hi = 0x8f;            // nothing above U+10FFFF
    else return false;
    if (s.size() - i <= extra) return false;
    for (size_t k = 1; k <= extra; ++k) {
      auto c = static_cast<unsigned char>(s[i + k]);
      if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xbf)) return false;
    }
    i += 1 + extra;
  }
  return true;
}

Result<Json> parseStrict(std::string_view bytes, size_t max_bytes, std::string_view doc) {
  Where root{doc, ""};
  if (bytes.size() > max_bytes)
    return root.error("larger than " + std::to_string(max_bytes) + " bytes");
  // nlohmann's lexer skips a UTF-8 byte order mark; JSON text has none (RFC 8259 section 8.1),
  // and a strict document is read exactly as its hash commits to it.
  if (bytes.starts_with("\xEF\xBB\xBF")) return root.error("starts with a UTF-8 byte order mark (save it without one)");
  // A raw NUL is never JSON (inside a string it must be escaped as \u0000), and nlohmann's
  // lexer takes it for the end of the input: whatever followed one went unread, unrefused.
  if (const size_t nul = bytes.find('\0'); nul != std::string_view::npos)
    return root.error("invalid JSON: a NUL byte at byte " + std::to_string(nul));
  StrictSax sax(doc);
  bool ok = false;
  try {
    ok = Json::sax_parse(bytes.begin(), bytes.end(), &sax, nlohmann::json::input_format_t::json,
                         /*strict=*/true);
  } catch (const std::exception& ex) {
    // The SAX interface reports errors through parse_error; this is only a backstop.
    return root.error("invalid JSON: " + reasonOf(ex));
  }
  if (sax.error()) return *sax.error();
  if (!ok) return root.error("invalid JSON");
  return std::move(sax.root());
}

}  // namespace corral::policy::manifest_fields
