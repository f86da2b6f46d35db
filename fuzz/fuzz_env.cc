// SPDX-License-Identifier: Apache-2.0
// Fuzzes parseAssignment and buildEnvironment: key grammar, secrecy of values, merge order.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "check.h"
#include "policy/env_policy.h"

namespace corral::fuzz {
namespace {

namespace env = policy::env;

// No escape printable() writes ends in 'S', so escaped input cannot spell this out.
constexpr std::string_view kSentinel = "SENTINEL-corral-7f3a";

bool keyMatchesRegex(const std::string& key) {
  static const std::regex kName("[A-Za-z_][A-Za-z0-9_]*", std::regex::ECMAScript);
  return std::regex_match(key, kName);
}

bool refKey(std::string_view key) {
  if (key.empty() || key.size() > env::kMaxNameLength) return false;
  auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (!alpha(key[0])) return false;
  for (char c : key)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

// Returns the accepted pair, if any, after checking every property of one assignment.
std::optional<std::pair<std::string, std::string>> checkAssignment(std::string_view kv) {
  auto r = env::parseAssignment(kv);
  PROPERTY_ONE_LINE_ERROR(r);
  size_t eq = kv.find('=');
  std::string_view key = kv.substr(0, eq);
  std::string_view value = eq == std::string_view::npos ? std::string_view() : kv.substr(eq + 1);
  bool ref = eq != std::string_view::npos && refKey(key) && value.find('\0') == std::string_view::npos;
  PROPERTY(r.ok() == ref, "parseAssignment and the reference disagree on '" + std::string(kv) + "'");
  if (!r.ok()) {
    // The value may be a secret: an error names the key at most. Put a sentinel in the
    // value's place (keeping a NUL, the one thing about a value that matters) and the
    // verdict must stay the same while the message never shows the sentinel.
    if (eq == std::string_view::npos || key.find(kSentinel) != std::string_view::npos) return std::nullopt;
    std::string hidden = std::string(key) + "=" + std::string(kSentinel);
    if (value.find('\0') != std::string_view::npos) hidden += '\0';
    auto h = env::parseAssignment(hidden);
    PROPERTY(!h.ok(), "the verdict depends on the value's text: " + std::string(kv));
    PROPERTY(h.error().message().find(kSentinel) == std::string::npos, "error echoes the value: " + h.error().message());
    return std::nullopt;
  }
  PROPERTY(keyMatchesRegex(r->first), "accepted key does not match [A-Za-z_][A-Za-z0-9_]*: " + r->first);
  PROPERTY(r->first.size() <= env::kMaxNameLength, r->first);
  PROPERTY(r->first + "=" + r->second == kv, "KEY=VALUE does not reassemble: " + std::string(kv));
  PROPERTY(r->second.find('\0') == std::string::npos, "value with NUL accepted");
  return std::move(*r);
}

void checkMerge(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::map<std::string, std::string> want;
  for (const std::string& kv : env::baseEnvironment()) {
    size_t eq = kv.find('=');
    PROPERTY(eq != std::string::npos && refKey(std::string_view(kv).substr(0, eq)), "bad base entry " + kv);
    want[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) want[k] = v;  // later wins
  std::vector<std::string> got = env::buildEnvironment(extra);
  PROPERTY(got.size() == want.size(), "merged environment has " + std::to_string(got.size()) + " entries, want " +
                                          std::to_string(want.size()));
  size_t i = 0;
  for (const auto& [k, v] : want) {  // std::map order: sorted by key, each once
    PROPERTY(got[i] == k + "=" + v, "merged entry " + std::to_string(i) + " is " + got[i] + ", want " + k + "=" + v);
    ++i;
  }
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  corral::fuzz::checkAssignment(text);  // whole input: values may hold newlines
  // Newline-separated: a sequence of --env flags, merged over the base environment.
  std::vector<std::pair<std::string, std::string>> extra;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    if (auto kv = corral::fuzz::checkAssignment(line)) extra.push_back(std::move(*kv));
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  corral::fuzz::checkMerge(extra);
  return 0;
}
