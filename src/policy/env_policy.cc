// SPDX-License-Identifier: Apache-2.0
// Base environment, KEY=VALUE parsing and merging.
#include "policy/env_policy.h"

#include <array>
#include <map>

#include "policy/units.h"

namespace corral::policy::env {
namespace {

constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kBase = {{
    {"PATH", "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"},
    {"HOME", "/workspace"},
    {"LANG", "C.UTF-8"},
    {"USER", "corral"},
    {"LOGNAME", "corral"},
    {"TMPDIR", "/tmp"},
    {"SHELL", "/bin/sh"},
    {"PWD", "/workspace"},
}};

bool nameStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool nameChar(char c) { return nameStart(c) || (c >= '0' && c <= '9'); }

}  // namespace

std::vector<std::string> baseEnvironment() {
  std::vector<std::string> out;
  out.reserve(kBase.size());
  for (const auto& [k, v] : kBase) out.push_back(std::string(k) + "=" + std::string(v));
  return out;
}

Result<std::pair<std::string, std::string>> parseAssignment(std::string_view kv) {
  size_t eq = kv.find('=');
  if (eq == std::string_view::npos) return Error(Errc::kInvalidArgument, "expected KEY=VALUE");
  std::string_view key = kv.substr(0, eq);
  std::string_view value = kv.substr(eq + 1);
  if (key.empty()) return Error(Errc::kInvalidArgument, "expected KEY=VALUE, the key is empty");
  if (key.size() > kMaxNameLength)
    return Error(Errc::kInvalidArgument, "the key is longer than " + std::to_string(kMaxNameLength) + " bytes");
  bool good = nameStart(key[0]);
  for (char c : key) good = good && nameChar(c);
  if (!good)
    return Error(Errc::kInvalidArgument,
                 "'" + printable(key) + "' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
  // A NUL would silently cut the value at execve; refuse rather than pass something else.
  if (value.find('\0') != std::string_view::npos)
    return Error(Errc::kInvalidArgument, "the value contains a NUL byte");
  return std::pair{std::string(key), std::string(value)};
}

std::vector<std::string> buildEnvironment(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::map<std::string, std::string, std::less<>> merged;
  for (const auto& [k, v] : kBase) merged[std::string(k)] = std::string(v);
  for (const auto& [k, v] : extra) merged[k] = v;
  std::vector<std::string> out;
  out.reserve(merged.size());
  for (const auto& [k, v] : merged) out.push_back(std::string(k).append("=").append(v));
  return out;
}

}  // namespace corral::policy::env
