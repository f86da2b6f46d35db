// SPDX-License-Identifier: Apache-2.0
// Streaming redaction: pattern derivation and leftmost-longest replacement.
#include "net/redactor.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace corral::net {
namespace {

constexpr std::string_view kB64Std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kB64Url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
// A derived pattern shorter than this says too little about the secret to be worth hiding
// and would redact ordinary text (a 1-byte secret's base64 middle is one letter).
constexpr size_t kMinDerived = 8;

void wipe(std::string& s) {
  volatile char* p = s.data();
  for (size_t i = 0; i < s.size(); ++i) p[i] = 0;
}

// The base64 characters that depend on the secret alone when `lead` (0, 1 or 2) bytes
// precede it in a larger base64 stream: the first char starting at or after bit 8*lead up to
// the last char ending at or before the secret's last bit. Neighbouring bytes and padding
// change the others, so they cannot be part of a pattern.
std::string base64Middle(std::string_view s, size_t lead, std::string_view alphabet) {
  size_t total_bits = 8 * (lead + s.size());
  size_t first = (8 * lead + 5) / 6, last = total_bits / 6;  // chars [first, last)
  auto bit = [&](size_t b) -> unsigned {
    if (b < 8 * lead) return 0;
    b -= 8 * lead;
    return (static_cast<unsigned char>(s[b / 8]) >> (7 - b % 8)) & 1u;
  };
  std::string out;
  for (size_t c = first; c < last; ++c) {
    unsigned v = 0;
    for (size_t b = 0; b < 6; ++b) v = (v << 1) | bit(6 * c + b);
    out += alphabet[v];
  }
  return out;
}

bool unreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

std::string hexByte(unsigned char u, bool upper) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  return {digits[u >> 4], digits[u & 15]};
}

// Percent-encoding: every byte, or only bytes outside the unreserved set; '+' for space
// is the form encoding (application/x-www-form-urlencoded).
std::string percentEncode(std::string_view s, bool upper, bool all, bool plus_for_space) {
  std::string out;
  for (char c : s) {
    if (plus_for_space && c == ' ') out += '+';
    else if (!all && unreserved(c)) out += c;
    else out += "%" + hexByte(static_cast<unsigned char>(c), upper);
  }
  return out;
}

std::string hexEncode(std::string_view s, bool upper) {
  std::string out;
  for (char c : s) out += hexByte(static_cast<unsigned char>(c), upper);
  return out;
}

// A JSON string body: '"', '\' and control bytes escaped, and optionally "\/" as some
// serialisers write it.
std::string jsonEscape(std::string_view s, bool escape_slash) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\' || (escape_slash && c == '/')) out += {'\\', c};
    else if (u < 0x20) out += "\\u00" + hexByte(u, false);
    else out += c;
  }
  return out;
}

}  // namespace

RedactionPatterns::RedactionPatterns(std::span<const RedactTarget> targets) : by_first_(256) {
  std::set<std::string> seen;
  for (const RedactTarget& t : targets) {
    if (t.value.empty()) continue;
    size_t label = markers_.size();
    markers_.push_back("[REDACTED:" + t.label + "]");
    names_.push_back(t.label);
    std::vector<std::string> derived;
    for (size_t lead = 0; lead < 3; ++lead) {
      derived.push_back(base64Middle(t.value, lead, kB64Std));
      derived.push_back(base64Middle(t.value, lead, kB64Url));
    }
    for (bool upper : {true, false}) {
      derived.push_back(percentEncode(t.value, upper, false, false));
      derived.push_back(percentEncode(t.value, upper, false, true));
      derived.push_back(percentEncode(t.value, upper, true, false));
      derived.push_back(hexEncode(t.value, upper));
    }
    derived.push_back(jsonEscape(t.value, false));
    derived.push_back(jsonEscape(t.value, true));
    auto add = [&](std::string bytes) {
      if (bytes.empty() || !seen.insert(bytes).second) return;
      patterns_.push_back({std::move(bytes), label});
    };
    add(std::string(t.value));
    for (std::string& d : derived) {
      if (d.size() >= kMinDerived) add(d);
      wipe(d);
    }
  }
  // The set holds copies of every pattern: wipe them before the nodes are freed.
  for (auto it = seen.begin(); it != seen.end();) {
    auto node = seen.extract(it++);
    wipe(node.value());
  }
  std::stable_sort(patterns_.begin(), patterns_.end(),
                   [](const Pattern& a, const Pattern& b) { return a.bytes.size() > b.bytes.size(); });
  for (uint32_t i = 0; i < patterns_.size(); ++i) {
    by_first_[static_cast<unsigned char>(patterns_[i].bytes[0])].push_back(i);
    longest_ = std::max(longest_, patterns_[i].bytes.size());
  }
}

RedactionPatterns::~RedactionPatterns() {
  for (Pattern& p : patterns_) wipe(p.bytes);
}

const RedactionPatterns::Pattern* RedactionPatterns::matchAt(std::string_view text, size_t pos) const {
  size_t room = text.size() - pos;
  for (uint32_t i : by_first_[static_cast<unsigned char>(text[pos])]) {
    const Pattern& p = patterns_[i];
    if (p.bytes.size() <= room && std::memcmp(text.data() + pos, p.bytes.data(), p.bytes.size()) == 0) return &p;
  }
  return nullptr;
}

// Invariant: byte i is decided only after every occurrence starting at or before i is
// known, and each of those needs the bytes up to i + longest - 1; so a byte is decided only
// when that much follows it (or the stream ended), and the decision equals the one-shot one.
size_t RedactionPatterns::scan(std::string_view text, bool at_end, ScanState& state, std::string& out) const {
  size_t i = 0;
  for (; i < text.size() && (at_end || text.size() - i >= longest_); ++i) {
    const Pattern* p = matchAt(text, i);
    if (p != nullptr && state.cover_left == 0) {  // a run of removed bytes starts here
      out += markers_[p->label];
      ++state.count;
      if (std::find(state.labels.begin(), state.labels.end(), p->label) == state.labels.end())
        state.labels.push_back(p->label);
    }
    if (p != nullptr) state.cover_left = std::max(state.cover_left, p->bytes.size());
    if (state.cover_left > 0) {
      --state.cover_left;
    } else {
      out += text[i];
    }
  }
  return i;
}

std::string RedactionPatterns::redactAll(std::string_view text, uint64_t* count, std::vector<std::string>* labels) const {
  std::string out;
  out.reserve(text.size());
  ScanState state;
  scan(text, true, state, out);
  if (count != nullptr) *count += state.count;
  if (labels != nullptr) addLabels(state, *labels);
  return out;
}

void RedactionPatterns::addLabels(const ScanState& state, std::vector<std::string>& labels) const {
  for (size_t l : state.labels)
    if (std::find(labels.begin(), labels.end(), names_[l]) == labels.end()) labels.push_back(names_[l]);
}

Redactor::Redactor(std::shared_ptr<const RedactionPatterns> patterns) : patterns_(std::move(patterns)) {}

Redactor::~Redactor() { wipe(held_); }

std::string Redactor::process(bool at_end) {
  std::string out;
  size_t done = patterns_->scan(held_, at_end, state_, out);
  // Wipe the decided prefix before dropping it: it may hold a secret that was redacted.
  volatile char* d = held_.data();
  for (size_t k = 0; k < done; ++k) d[k] = 0;
  held_.erase(0, done);
  return out;
}

std::string Redactor::feed(std::string_view chunk) {
  held_.append(chunk);
  return process(false);
}

std::string Redactor::finish() { return process(true); }

}  // namespace corral::net
