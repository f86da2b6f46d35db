// SPDX-License-Identifier: Apache-2.0
// Input patterns: their rules, matching a workspace path, and whether one pattern lies
// within another (for spawn scopes).
#include <vector>

#include "policy/manifest_fields.h"
#include "policy/path_policy.h"

namespace corral::policy {
namespace {

constexpr std::string_view kReserved = ".corral";

std::vector<std::string_view> split(std::string_view p) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t slash = p.find('/', start);
    parts.push_back(p.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) return parts;
    start = slash + 1;
  }
}

// Bytes in the character at s[i]: a lead byte and the continuation bytes that follow it
// (at most 3); a stray byte counts as one character. '?' and '*' step by these, so a
// pattern never matches half of a UTF-8 character.
size_t charLen(std::string_view s, size_t i) {
  auto lead = static_cast<unsigned char>(s[i]);
  size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  size_t n = 1;
  while (n < want && i + n < s.size() && (static_cast<unsigned char>(s[i + n]) & 0xc0) == 0x80) ++n;
  return n;
}

// One component against one pattern component ('*', '?', literal bytes).
bool componentMatch(std::string_view pat, std::string_view name) {
  // A leading '.' is matched only by a literal one: "*" and "?" do not reach dotfiles.
  if (!name.empty() && name.front() == '.' && (pat.empty() || pat.front() != '.')) return false;
  constexpr size_t kNone = std::string_view::npos;
  size_t p = 0, n = 0, star_p = kNone, star_n = 0;
  while (n < name.size()) {
    if (p < pat.size() && pat[p] == '*') {
      star_p = ++p;
      star_n = n;
    } else if (p < pat.size() && pat[p] == '?') {
      ++p;
      n += charLen(name, n);
    } else if (p < pat.size() && pat[p] == name[n]) {
      ++p;
      ++n;
    } else if (star_p != kNone) {
      // Greedy '*' with one backtrack point is exact here: a later '*' can absorb anything
      // an earlier one could, since neither may cross '/'.
      star_n += charLen(name, star_n);
      n = star_n;
      p = star_p;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

bool dotLeading(std::string_view comp) { return !comp.empty() && comp.front() == '.'; }

// A workspace path in normal form: relative, no empty, "." or ".." component.
bool normalPath(const std::vector<std::string_view>& comps) {
  for (std::string_view c : comps)
    if (c.empty() || c == "." || c == "..") return false;
  return true;
}

}  // namespace

bool isGlob(std::string_view pattern) { return pattern.find_first_of("*?") != std::string_view::npos; }

bool inputGlobMatch(std::string_view pattern, std::string_view path) {
  if (pattern.empty() || path.empty()) return false;
  std::vector<std::string_view> pc = split(pattern), sc = split(path);
  if (!normalPath(sc)) return false;
  // match[j]: the pattern components so far match the first j path components. "**" extends
  // a match over any run of components that do not start with '.'. A trailing "**" needs at
  // least one: "src/**" is what lies below src, never src itself, so no reading of a
  // directory match can pull in what the pattern skips (src/.env).
  std::vector<bool> match(sc.size() + 1, false), next(sc.size() + 1, false);
  match[0] = true;
  for (size_t i = 0; i < pc.size(); ++i) {
    std::string_view p = pc[i];
    if (p == "**") {
      const bool last = i + 1 == pc.size();
      next[0] = !last && match[0];
      for (size_t j = 1; j <= sc.size(); ++j)
        next[j] = (!last && match[j]) || ((match[j - 1] || next[j - 1]) && !dotLeading(sc[j - 1]));
    } else {
      next[0] = false;
      for (size_t j = 1; j <= sc.size(); ++j) next[j] = match[j - 1] && componentMatch(p, sc[j - 1]);
    }
    match.swap(next);
  }
  return match[sc.size()];
}

bool declaresFile(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs, std::string_view rel) {
  for (const std::string& o : outputs)
    if (o == rel) return true;
  for (const std::string& p : inputs)
    if (inputGlobMatch(p, rel)) return true;
  return false;
}

bool mayDeclareBelow(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                     std::string_view dir) {
  for (const std::string& o : outputs)
    if (o.size() > dir.size() && o.starts_with(dir) && o[dir.size()] == '/') return true;
  for (const std::string& p : inputs)
    if (inputGlobMayMatchBelow(p, dir)) return true;
  return false;
}

bool inputGlobMayMatchBelow(std::string_view pattern, std::string_view dir) {
  if (pattern.empty() || dir.empty()) return false;
  std::vector<std::string_view> pc = split(pattern), dc = split(dir);
  if (!normalPath(dc)) return false;
  // The pattern positions reachable after the directory's components; "**" (not last) may
  // also match nothing, so a position on it reaches the next one too.
  auto closure = [&pc](std::vector<bool> states) {
    for (size_t i = 0; i < pc.size(); ++i)
      if (states[i] && pc[i] == "**" && i + 1 < pc.size()) states[i + 1] = true;
    return states;
  };
  std::vector<bool> states(pc.size() + 1, false);
  states[0] = true;
  for (std::string_view c : dc) {
    states = closure(std::move(states));
    std::vector<bool> next(pc.size() + 1, false);
    for (size_t i = 0; i < pc.size(); ++i) {
      if (!states[i]) continue;
      if (pc[i] == "**") {
        if (!dotLeading(c)) next[i] = true;  // "**" goes on past c (never into a dot directory)
      } else if (componentMatch(pc[i], c)) {
        next[i + 1] = true;
      }
    }
    states = std::move(next);
  }
  states = closure(std::move(states));
  // Some component is still to be matched: a path below dir may complete the pattern.
  for (size_t i = 0; i < pc.size(); ++i)
    if (states[i]) return true;
  return false;
}

namespace manifest_fields {

Result<std::string> inputPattern(std::string_view p) {
  auto invalid = [&](const std::string& why) { return Error(Errc::kInvalidArgument, shown(p) + " " + why); };
  if (p.empty()) return Error(Errc::kInvalidArgument, "is empty");
  if (p.front() == '/') return invalid("is absolute; inputs are relative to the workspace");
  // Glob characters are ordinary bytes to outputPath: it checks the normal form and the
  // literal .corral/ prefix.
  if (auto r = path::outputPath(p); !r.ok()) return invalid(r.error().context());
  std::vector<std::string_view> comps = split(p);
  for (std::string_view c : comps)
    if (c != "**" && c.find("**") != std::string_view::npos)
      return invalid("uses '**' inside a component; it must stand alone, as in 'src/**'");
  // "**" never enters a dot directory, so only the first other component can reach .corral/.
  for (std::string_view c : comps) {
    if (c == "**") continue;
    // As a casefolding filesystem sees it: ".CORRAL", ".C?rral." reach it too.
    const std::string folded = path::reservedFold(c);
    if (componentMatch(folded, kReserved) || componentMatch(folded, "corral~1") || componentMatch(folded, ".corral~1")) return invalid("can match .corral/, which corral reserves");
    break;
  }
  return std::string(p);
}

bool patternWithin(std::string_view child, std::string_view parent) {
  if (child == parent) return true;
  if (!isGlob(child)) return inputGlobMatch(parent, child);
  // A glob is within "D/**" (D literal) or "**" when it starts with D's components and none
  // of its own after them starts with '.': each can then match only names "**" also matches.
  std::vector<std::string_view> pc = split(parent), cc = split(child);
  if (pc.back() != "**") return false;
  pc.pop_back();
  for (std::string_view d : pc)
    if (isGlob(d)) return false;
  if (cc.size() <= pc.size()) return false;
  for (size_t i = 0; i < pc.size(); ++i)
    if (cc[i] != pc[i]) return false;
  for (size_t i = pc.size(); i < cc.size(); ++i)
    if (dotLeading(cc[i])) return false;
  return true;
}

}  // namespace manifest_fields
}  // namespace corral::policy
