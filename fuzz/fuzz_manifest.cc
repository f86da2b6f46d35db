// SPDX-License-Identifier: Apache-2.0
// Fuzzes parseManifest and attenuate: canonical JSON round-trips, and a spawn scope never
// yields a child with anything its parent lacks.
//
// Input: MANIFEST [NUL SCOPE]. Without a NUL the same bytes are tried as the scope too. When
// MANIFEST does not parse, a fixed parent stands in so the scope is still fuzzed.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "policy/egress_grant.h"
#include "policy/manifest.h"

namespace corral::fuzz {
namespace {

using policy::Manifest;
using std::chrono::milliseconds;

constexpr const char* kFixedParent = R"({"version":1,"task":"p",
  "model":{"provider":"replay","transcript":"r.json"},
  "inputs":["src/**","docs/*.md","README.md",".github/**","**/*.txt","a/**/b/*"],
  "outputs":["src/fix.py","out.txt"],"executables":["python3","git"],"env":["A=1","B=2"],
  "budgets":{"max_turns":20,"max_model_calls":40,"wall_time":"10m","command_timeout":"60s",
             "max_output_bytes":"64K","max_loops":4,"max_pending_tasks":2},
  "sandbox":{"memory":"512M","allow_weaker":["memory"]}})";

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Concrete paths a glob might match: each '*' and '?' and "**" filled in several ways,
// including with dot-leading names and multi-byte characters. Chosen by the bits of v.
std::string sample(std::string_view pattern, unsigned v) {
  static constexpr const char* kStar[] = {"", "x", ".h", "\xc3\xa9z"};
  static constexpr const char* kQ[] = {"q", ".", "\xc3\xa9", "0"};
  static constexpr const char* kDeep[] = {"", "d", "d/e", ".d"};
  std::string out;
  unsigned bits = v;
  for (std::string_view comp : refSplit(pattern)) {
    std::string c;
    if (comp == "**") {
      c = kDeep[bits & 3];
      bits = (bits >> 2) | (bits << 30);
      if (c.empty()) continue;
    } else {
      for (char ch : comp) {
        if (ch == '*') c += kStar[bits & 3];
        else if (ch == '?') c += kQ[bits & 3];
        else c += ch;
        if (ch == '*' || ch == '?') bits = (bits >> 2) | (bits << 30);
      }
    }
    if (!out.empty()) out += '/';
    out += c;
  }
  return out;
}

void checkRoundTrip(const Manifest& m, std::string_view what) {
  const std::string canonical = policy::manifestToCanonicalJson(m);
  auto again = policy::parseManifest(canonical);
  PROPERTY(again.ok(), std::string(what) + " canonical JSON does not parse: " +
                           (again.ok() ? "" : again.error().message()) + " in " + canonical);
  PROPERTY(*again == m, std::string(what) + " canonical JSON parses to a different manifest: " + canonical);
  PROPERTY(policy::manifestToCanonicalJson(*again) == canonical, std::string(what) + " canonical JSON is unstable");
  for (const std::string& in : m.inputs) {
    if (!policy::isGlob(in)) PROPERTY(policy::inputGlobMatch(in, in), "a concrete input does not match itself: " + in);
    // Staging skips a directory when inputGlobMayMatchBelow says nothing below it can match:
    // every ancestor of a matching path must be entered.
    for (unsigned v = 0; v < 16; ++v) {
      const std::string path = sample(in, v * 2246822519u + 1);
      if (!policy::inputGlobMatch(in, path)) continue;
      for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1))
        PROPERTY(policy::inputGlobMayMatchBelow(in, path.substr(0, slash)),
                 "staging would skip " + path.substr(0, slash) + " though " + in + " matches " + path);
    }
  }
}

void checkChild(const Manifest& parent, const policy::Remaining& left, const Manifest& c) {
  PROPERTY(c.version == parent.version && c.model == parent.model && c.network == parent.network &&
               c.credentials == parent.credentials && c.sandbox == parent.sandbox,
           "child changed an inherited field");
  PROPERTY(c.task == "t", "child task is not the one given");
  for (const std::string& o : c.outputs) PROPERTY(contains(parent.outputs, o), "child output not in parent: " + o);
  for (const std::string& e : c.executables)
    PROPERTY(contains(parent.executables, e), "child executable not in parent: " + e);
  for (const std::string& e : c.env) PROPERTY(contains(parent.env, e), "child env entry not in parent");
  auto coveredByParent = [&](const std::string& path) {
    return std::any_of(parent.inputs.begin(), parent.inputs.end(),
                       [&](const std::string& p) { return policy::inputGlobMatch(p, path); });
  };
  for (const std::string& in : c.inputs) {
    if (contains(parent.inputs, in)) continue;
    if (!policy::isGlob(in)) {
      PROPERTY(coveredByParent(in), "child input not matched by any parent pattern: " + in);
      continue;
    }
    for (unsigned v = 0; v < 64; ++v) {
      std::string path = sample(in, v * 2654435761u);
      if (policy::inputGlobMatch(in, path))
        PROPERTY(coveredByParent(path), "child glob " + in + " reaches a path the parent does not: " + path);
    }
  }
  const policy::Budgets &b = c.budgets, &p = parent.budgets;
  PROPERTY(b.max_turns <= p.max_turns, "child max_turns above parent");
  PROPERTY(b.max_model_calls <= p.max_model_calls && b.max_model_calls <= left.model_calls,
           "child max_model_calls above parent or left");
  PROPERTY(b.wall_time <= p.wall_time && b.wall_time <= left.wall_time, "child wall_time above parent or left");
  PROPERTY(b.command_timeout <= p.command_timeout && b.command_timeout <= b.wall_time,
           "child command_timeout above parent or its wall_time");
  PROPERTY(b.max_output_bytes <= p.max_output_bytes, "child max_output_bytes above parent");
  PROPERTY(b.max_loops <= p.max_loops && b.max_loops <= left.loops, "child max_loops above parent or left");
  PROPERTY(b.max_pending_tasks <= p.max_pending_tasks && b.max_pending_tasks <= left.pending_tasks,
           "child max_pending_tasks above parent or left");
  checkRoundTrip(c, "child");
}

void checkSpawn(const Manifest& parent, std::string_view scope) {
  const policy::Remaining lots{1'000'000, milliseconds(48 * 3'600'000), 1'000, 1'000};
  // And a tight one, from the scope's own bytes, to reach the refusals near zero.
  policy::Remaining tight{0, milliseconds(0), 0, 1};
  if (scope.size() >= 4) {
    tight.model_calls = static_cast<uint8_t>(scope[0]) % 50;
    tight.wall_time = milliseconds(static_cast<uint8_t>(scope[1]) * 997);
    tight.pending_tasks = static_cast<uint8_t>(scope[2]) % 4;
    tight.loops = static_cast<uint8_t>(scope[3]) % 5;
  }
  for (const policy::Remaining& left : {lots, tight}) {
    auto child = policy::attenuate(parent, left, "t", scope);
    PROPERTY_ONE_LINE_ERROR(child);
    if (child.ok()) checkChild(parent, left, *child);
  }
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t nul = input.find('\0');
  std::string_view manifest = input.substr(0, nul);
  std::string_view scope = nul == std::string_view::npos ? input : input.substr(nul + 1);

  auto parsed = policy::parseManifest(manifest);
  PROPERTY_ONE_LINE_ERROR(parsed);
  if (parsed.ok()) {
    // Grants are kept in canonical text (the runner's proxy enforces them): parsing one again
    // gives the same text, and none is there twice. (Until the egress proxy existed, the
    // property here was that no grant was accepted at all.)
    const std::vector<std::string>& allow = parsed->network.allow;
    for (size_t i = 0; i < allow.size(); ++i) {
      auto again = policy::egress::parseGrant(allow[i]);
      PROPERTY(again.ok() && again->text() == allow[i], "a grant is not kept canonical: " + allow[i]);
      PROPERTY(std::find(allow.begin(), allow.begin() + static_cast<std::ptrdiff_t>(i), allow[i]) ==
                   allow.begin() + static_cast<std::ptrdiff_t>(i),
               "a grant was accepted twice: " + allow[i]);
    }
    fuzz::checkRoundTrip(*parsed, "manifest");
  }
  static const policy::Manifest kFixed = *policy::parseManifest(fuzz::kFixedParent);
  fuzz::checkSpawn(parsed.ok() ? *parsed : kFixed, scope);
  return 0;
}
