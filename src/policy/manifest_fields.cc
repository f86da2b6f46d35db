// SPDX-License-Identifier: Apache-2.0
// Typed field readers and per-entry rules shared by parseManifest and attenuate.
#include "policy/manifest_fields.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "policy/egress_grant.h"
#include "policy/env_policy.h"
#include "policy/path_policy.h"
#include "policy/units.h"

namespace corral::policy::manifest_fields {
namespace {

Error invalid(std::string rule) { return Error(Errc::kInvalidArgument, std::move(rule)); }

std::string range(uint64_t lo, uint64_t hi) { return std::to_string(lo) + ".." + std::to_string(hi); }

// 600000 -> "10m", 1500 -> "1500ms": the largest unit that divides exactly.
std::string showMs(uint64_t ms) {
  if (ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1'000 == 0) return std::to_string(ms / 1'000) + "s";
  return std::to_string(ms) + "ms";
}

std::string showBytes(uint64_t n) {
  if (n >= (1ull << 40) && n % (1ull << 40) == 0) return std::to_string(n >> 40) + "T";
  if (n >= (1ull << 30) && n % (1ull << 30) == 0) return std::to_string(n >> 30) + "G";
  if (n >= (1ull << 20) && n % (1ull << 20) == 0) return std::to_string(n >> 20) + "M";
  if (n >= (1ull << 10) && n % (1ull << 10) == 0) return std::to_string(n >> 10) + "K";
  return std::to_string(n);
}

bool envNameReserved(std::string_view key) {
  // LD_*: the dynamic loader reads these (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, ...).
  // PATH: executables are allowlisted by basename and found on corral's fixed PATH;
  // another PATH would point the same names at other files. HOME: fixed to /workspace.
  // The proxy variables: with network grants they point at corral's egress proxy.
  for (std::string_view name : egress::kProxyEnvironmentNames)
    if (key == name) return true;
  return key.substr(0, 3) == "LD_" || key == "PATH" || key == "HOME";
}

}  // namespace

Result<void> requireObject(const Json& v, const Where& w) {
  if (!v.is_object()) return w.error("must be a JSON object");
  return {};
}

Result<void> onlyKeys(const Json& obj, const Where& w, std::initializer_list<std::string_view> known) {
  RETURN_IF_ERROR(requireObject(obj, w));
  for (const auto& [k, v] : obj.items())
    if (std::find(known.begin(), known.end(), k) == known.end()) return w.key(k).error("unknown field");
  return {};
}

Result<std::string> string(const Json& v, const Where& w) {
  if (!v.is_string()) return w.error("must be a string");
  return v.get<std::string>();
}

Result<uint64_t> integer(const Json& v, const Where& w, uint64_t lo, uint64_t hi) {
  // Non-negative JSON integers parse as unsigned; -1 is signed, 1.5/1e30/2^64 are floats.
  if (!v.is_number_unsigned() || v.get<uint64_t>() < lo || v.get<uint64_t>() > hi)
    return w.error("must be an integer in " + range(lo, hi));
  return v.get<uint64_t>();
}

Result<milliseconds> duration(const Json& v, const Where& w, milliseconds lo, milliseconds hi) {
  auto bad = [&] {
    return w.error("must be a duration string in " + showMs(static_cast<uint64_t>(lo.count())) + ".." +
                   showMs(static_cast<uint64_t>(hi.count())) + " (e.g. \"250ms\", \"30s\", \"10m\")");
  };
  if (!v.is_string()) return bad();
  const auto& text = v.get_ref<const std::string&>();
  // parseDuration reads a bare number as seconds; a manifest must say which unit it means.
  if (text.empty() || !std::isalpha(static_cast<unsigned char>(text.back()))) return bad();
  auto d = parseDuration(text);
  if (!d.ok() || *d < lo || *d > hi) return bad();
  return *d;
}

Result<uint64_t> size(const Json& v, const Where& w, uint64_t lo, uint64_t hi) {
  std::optional<uint64_t> n;
  if (v.is_number_unsigned()) {
    n = v.get<uint64_t>();
  } else if (v.is_string()) {
    if (auto parsed = parseSize(v.get_ref<const std::string&>()); parsed.ok()) n = *parsed;
  }
  if (!n || *n < lo || *n > hi)
    return w.error("must be a size in " + showBytes(lo) + ".." + showBytes(hi) +
                   " (bytes as an integer, or a string like \"64K\", \"512M\")");
  return *n;
}

Result<std::vector<std::string>> list(const Json& v, const Where& w, EntryRule rule) {
  if (!v.is_array()) return w.error("must be an array of strings");
  if (v.size() > kMaxListEntries) return w.error("more than " + std::to_string(kMaxListEntries) + " entries");
  std::vector<std::string> out;
  std::set<std::string, std::less<>> seen;
  for (size_t i = 0; i < v.size(); ++i) {
    ASSIGN_OR_RETURN(std::string s, string(v[i], w.at(i)));
    auto checked = rule(s);
    if (!checked.ok()) return w.at(i).error(checked.error().context());
    // env entries are "K=V" and V may be a secret: its rule reports repeated keys without
    // echoing; this catches exact repeats of everything else.
    if (!seen.insert(*checked).second) return w.at(i).error("repeats an earlier entry");
    out.push_back(std::move(*checked));
  }
  return out;
}

Result<std::string> outputEntry(std::string_view p) {
  if (p.empty()) return invalid("is empty");
  if (p.front() == '/') return invalid(shown(p) + " is absolute; outputs are relative to the workspace");
  auto checked = path::outputPath(p);
  if (!checked.ok()) return invalid(shown(p) + " " + checked.error().context());
  if (p.find_first_of("*?") != std::string_view::npos)
    return invalid(shown(p) + " is a glob; outputs are exact paths");
  return std::string(p);
}

Result<std::string> executable(std::string_view name) {
  if (name.empty()) return invalid("is empty");
  if (name.size() > path::kMaxComponent)
    return invalid("is longer than " + std::to_string(path::kMaxComponent) + " bytes");
  if (name.find('/') != std::string_view::npos)
    return invalid(shown(name) + " is a path; executables are basenames found on the sandbox PATH (e.g. 'python3')");
  if (name == "." || name == "..") return invalid(shown(name) + " is not a program name");
  if (name.front() == '-') return invalid(shown(name) + " starts with '-'");
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '+' || c == '-';
    if (!ok)
      return invalid(shown(name) + " has a character outside letters, digits, '.', '_', '+' and '-'");
  }
  return std::string(name);
}

Result<std::string> envEntry(std::string_view kv) {
  // Never echo the value: it may be a secret. The key is shown once it is known to be a name.
  size_t eq = kv.find('=');
  if (eq == std::string_view::npos) return invalid("expected KEY=VALUE");
  std::string_view key = kv.substr(0, eq);
  auto parsed = env::parseAssignment(kv);
  if (!parsed.ok()) {
    bool name_ok = !key.empty() && key.size() <= env::kMaxNameLength;
    for (size_t i = 0; name_ok && i < key.size(); ++i) {
      char c = key[i];
      name_ok = c == '_' || std::isalpha(static_cast<unsigned char>(c)) ||
                (i > 0 && std::isdigit(static_cast<unsigned char>(c)));
    }
    if (!name_ok) return invalid("the key is not a variable name ([A-Za-z_][A-Za-z0-9_]*, at most 255 bytes)");
    return invalid("the value of " + shown(key) + " " +
                   (kv.find('\0') != std::string_view::npos ? "contains a NUL byte" : "is not valid"));
  }
  if (envNameReserved(key))
    return invalid(shown(key) + " may not be set (LD_*, PATH, HOME and the *_PROXY variables are fixed by corral)");
  return std::string(kv);
}

Result<std::string> anyString(std::string_view s) { return std::string(s); }

Result<std::vector<std::string>> envList(const Json& v, const Where& w) {
  ASSIGN_OR_RETURN(std::vector<std::string> entries, list(v, w, envEntry));
  std::set<std::string_view> keys;
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string_view key = std::string_view(entries[i]).substr(0, entries[i].find('='));
    if (!keys.insert(key).second) return w.at(i).error(shown(key) + " is set twice");
  }
  return entries;
}

Result<void> checkTask(std::string_view task) {
  if (task.size() > kMaxTaskBytes) return invalid("longer than " + std::to_string(kMaxTaskBytes) + " bytes");
  if (!validUtf8(task)) return invalid("not valid UTF-8");
  bool blank = true;
  for (char c : task) {
    auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t' && c != '\n' && c != '\r') || u == 0x7f)
      return invalid("contains a control byte (only tab, newline and carriage return are allowed)");
    if (!std::isspace(u)) blank = false;
  }
  if (blank) return invalid("is empty");
  return {};
}

Result<void> readBudgets(const Json& obj, const Where& w, Budgets& b, bool present[7]) {
  auto ms = [](uint64_t v) { return milliseconds(static_cast<int64_t>(v)); };
  auto has = [&](size_t i) {
    present[i] = obj.contains(std::string(kBudgetKeys[i]));
    return present[i];
  };
  // Called only after has(i): find() cannot be end(), and nothing here can throw.
  auto at = [&](size_t i) -> const Json& { return *obj.find(std::string(kBudgetKeys[i])); };
  auto where = [&](size_t i) { return w.key(kBudgetKeys[i]); };
  if (has(0)) {
    ASSIGN_OR_RETURN(uint64_t v, integer(at(0), where(0), kMaxTurns.lo, kMaxTurns.hi));
    b.max_turns = static_cast<uint32_t>(v);
  }
  if (has(1)) {
    ASSIGN_OR_RETURN(uint64_t v, integer(at(1), where(1), kMaxModelCalls.lo, kMaxModelCalls.hi));
    b.max_model_calls = static_cast<uint32_t>(v);
  }
  if (has(2)) {
    ASSIGN_OR_RETURN(b.wall_time, duration(at(2), where(2), ms(kWallTimeMs.lo), ms(kWallTimeMs.hi)));
  }
  if (has(3)) {
    ASSIGN_OR_RETURN(b.command_timeout,
                     duration(at(3), where(3), ms(kCommandTimeoutMs.lo), ms(kCommandTimeoutMs.hi)));
  }
  if (has(4)) {
    ASSIGN_OR_RETURN(b.max_output_bytes, size(at(4), where(4), kMaxOutputBytes.lo, kMaxOutputBytes.hi));
  }
  if (has(5)) {
    ASSIGN_OR_RETURN(uint64_t v, integer(at(5), where(5), kMaxLoops.lo, kMaxLoops.hi));
    b.max_loops = static_cast<uint32_t>(v);
  }
  if (has(6)) {
    ASSIGN_OR_RETURN(uint64_t v, integer(at(6), where(6), kMaxPendingTasks.lo, kMaxPendingTasks.hi));
    b.max_pending_tasks = static_cast<uint32_t>(v);
  }
  return {};
}

}  // namespace corral::policy::manifest_fields
