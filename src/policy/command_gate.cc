// SPDX-License-Identifier: Apache-2.0
// The `run` tool's command gate: basename allowlist and argument hygiene.
#include "policy/command_gate.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "policy/git_gate.h"
#include "policy/units.h"

namespace corral::policy {
namespace {

CommandDecision refuse(std::string rule, std::string reason) {
  return CommandDecision::refused(std::move(rule), std::move(reason));
}

std::string hexByte(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", b);
  return buf;
}

// Length of the well-formed UTF-8 sequence at s[i] (1..4), or 0 when it is not one:
// truncated, overlong, a surrogate (U+D800..DFFF) or above U+10FFFF.
size_t utf8Length(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b = at(i);
  if (b < 0x80) return 1;
  auto cont = [&](size_t k, unsigned char lo, unsigned char hi) {
    return k < s.size() && at(k) >= lo && at(k) <= hi;
  };
  if (b >= 0xc2 && b <= 0xdf) return cont(i + 1, 0x80, 0xbf) ? 2 : 0;
  if (b >= 0xe0 && b <= 0xef) {
    unsigned char lo = b == 0xe0 ? 0xa0 : 0x80;  // E0 80..9F would be overlong
    unsigned char hi = b == 0xed ? 0x9f : 0xbf;  // ED A0..BF are the surrogates
    return cont(i + 1, lo, hi) && cont(i + 2, 0x80, 0xbf) ? 3 : 0;
  }
  if (b >= 0xf0 && b <= 0xf4) {
    unsigned char lo = b == 0xf0 ? 0x90 : 0x80;  // F0 80..8F would be overlong
    unsigned char hi = b == 0xf4 ? 0x8f : 0xbf;  // F4 90.. is above U+10FFFF
    return cont(i + 1, lo, hi) && cont(i + 2, 0x80, 0xbf) && cont(i + 3, 0x80, 0xbf) ? 4 : 0;
  }
  return 0;
}

struct Problem {
  std::string rule;
  std::string what;  // completes "argument N ..."
};

// '~' is expanded by a shell only at the start of a word or after '=' / ':' (assignments,
// PATH-like lists); elsewhere it is git's "first parent" operator (HEAD~1) and inert.
bool tildeExpands(std::string_view s, size_t i) { return i == 0 || s[i - 1] == '=' || s[i - 1] == ':'; }

// The first problem in one string, scanning left to right so the report names the first
// offending character. Echoes at most that one character, never the text around it.
std::optional<Problem> firstProblem(std::string_view s, bool metachars = true, bool tab_newline = false) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8Length(s, i);
    if (n == 0)
      return Problem{"utf8", "is not valid UTF-8 (byte " + std::to_string(i) + ")"};
    auto b = static_cast<unsigned char>(s[i]);
    if ((b < 0x20 || b == 0x7f) && !(tab_newline && (b == '\t' || b == '\n')))
      return Problem{"control", "contains control byte " + hexByte(b) + " at byte " + std::to_string(i)};
    // C1 controls (U+0080..U+009F, encoded C2 80..C2 9F): CSI and friends for terminals
    // that read the trace; no file name or message needs them.
    if (b == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0)
      return Problem{"control", "contains C1 control character at byte " + std::to_string(i)};
    if (metachars && n == 1 && kShellMetachars.find(s[i]) != std::string_view::npos && (s[i] != '~' || tildeExpands(s, i)))
      return Problem{"metachar", std::string("contains shell metacharacter '") + s[i] + "'"};
    i += n;
  }
  return std::nullopt;
}

// Basename of the model's path; the directory part is discarded (PATH decides inside).
std::string_view basenameOf(std::string_view command) {
  size_t slash = command.rfind('/');
  return slash == std::string_view::npos ? command : command.substr(slash + 1);
}

// At most 32 bytes of model text for a reason string, cut on a character boundary.
std::string shortShown(std::string_view s) {
  constexpr size_t kMax = 32;
  if (s.size() <= kMax) return printable(s);
  size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;
  return printable(s.substr(0, cut)) + "...";
}

}  // namespace

CommandDecision checkArguments(const std::vector<std::string>& args, bool literal) {
  if (args.size() > kMaxArgs)
    return refuse("limit", std::to_string(args.size()) + " arguments, more than the limit of " + std::to_string(kMaxArgs));
  size_t total = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string name = "argument " + std::to_string(i + 1);
    if (a.size() > kMaxArgBytes)
      return refuse("limit", name + " is " + std::to_string(a.size()) + " bytes, more than the limit of " +
                                 std::to_string(kMaxArgBytes));
    total += a.size() + 1;  // counted as execve does, with its terminating NUL
    if (total > kMaxArgvBytes)
      return refuse("limit", "the arguments exceed " + std::to_string(kMaxArgvBytes) + " bytes in total");
    if (auto p = firstProblem(a, /*metachars=*/!literal, /*tab_newline=*/literal)) return refuse(p->rule, name + " " + p->what);
  }
  CommandDecision ok;
  ok.allowed = true;
  ok.rule = "args";
  ok.reason = "arguments are plain";
  return ok;
}

CommandDecision gateCommand(const std::vector<std::string>& allowed, std::string_view command,
                            const std::vector<std::string>& args, const std::vector<std::string>& literal) {
  if (command.size() > kMaxArgBytes) return refuse("command", "the command is longer than " + std::to_string(kMaxArgBytes) + " bytes");
  // Metacharacters in the command need no rule of their own: no allowlisted basename has one.
  if (auto p = firstProblem(command, /*metachars=*/false)) return refuse("command", "the command " + p->what);
  std::string_view base = basenameOf(command);
  if (base.empty() || base == "." || base == "..")
    return refuse("command", "the command has no program name (empty, '.', '..' or ending in '/')");
  // Exact, case-sensitive: "Python3" is not "python3". An entry holding '/' never matches.
  bool listed = std::any_of(allowed.begin(), allowed.end(), [&](const std::string& a) { return a == base; });
  if (!listed) return refuse("allowlist", "'" + shortShown(base) + "' is not an allowlisted command");
  if (base == "git") return gateGit(args);
  const bool marked = std::any_of(literal.begin(), literal.end(), [&](const std::string& a) { return a == base; });
  CommandDecision d = checkArguments(args, marked);
  if (!d.allowed && d.rule == "metachar")
    d.reason += " (no shell runs commands; the manifest can list {\"name\": \"" + shortShown(base) +
                "\", \"literal_args\": true} to pass them)";
  if (!d.allowed) return d;
  d.rule = marked ? "allowlist.literal_args" : "allowlist";
  d.reason = "'" + shortShown(base) + "' is allowlisted";
  d.argv.reserve(args.size() + 1);
  d.argv.emplace_back(base);
  d.argv.insert(d.argv.end(), args.begin(), args.end());
  return d;
}

}  // namespace corral::policy
