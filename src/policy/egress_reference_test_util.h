// SPDX-License-Identifier: Apache-2.0
// A deliberately simple grant matcher, written apart from egress_grant.cc, that the unit
// tests and fuzz/fuzz_egress.cc compare the real matcher with. Strings only, no types.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace corral::policy::egress::reference {

struct RefGrant {
  std::string scheme;  // "http" or "https"
  bool wildcard = false;
  std::string host;  // as written in an authority: "example.com", "[::1]"
  int port = 0;
};

// Lowercase and one trailing dot dropped: all the canonicalisation the test alphabet needs.
inline std::string refHost(std::string_view h) {
  std::string s(h);
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c += 'a' - 'A';
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// "scheme://[*.]host[:port]" over the test alphabet (letters, digits, '.', "[::1]").
// nullopt for what a grant may not be: another scheme, a wildcard over a single label or an
// IP literal.
inline std::optional<RefGrant> refParse(std::string_view text) {
  RefGrant g;
  if (text.rfind("http://", 0) == 0) g.scheme = "http";
  else if (text.rfind("https://", 0) == 0) g.scheme = "https";
  else return std::nullopt;
  std::string rest(text.substr(g.scheme.size() + 3));
  if (rest.rfind("*.", 0) == 0) {
    g.wildcard = true;
    rest = rest.substr(2);
  }
  size_t colon = rest.rfind(':');
  if (colon != std::string::npos && rest.find(']', colon) == std::string::npos) {
    g.port = std::stoi(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
  } else {
    g.port = g.scheme == "http" ? 80 : 443;
  }
  g.host = refHost(rest);
  bool ip = g.host[0] == '[' || g.host.find_first_not_of("0123456789.") == std::string::npos;
  if (g.wildcard && (ip || g.host.find('.') == std::string::npos)) return std::nullopt;
  return g;
}

inline bool refHostMatches(const RefGrant& g, const std::string& host) {
  if (!g.wildcard) return host == g.host;
  std::string suffix = "." + g.host;
  return host.size() > suffix.size() && host.compare(host.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The rule id the real decide() must give, and the first granting index when allowed.
struct RefDecision {
  std::string rule;
  int granted_by = -1;
};
inline RefDecision refDecide(const std::vector<RefGrant>& grants, const std::string& scheme, const std::string& host,
                             int port) {
  for (size_t i = 0; i < grants.size(); ++i)
    if (grants[i].scheme == scheme && grants[i].port == port && refHostMatches(grants[i], host))
      return {"allowed", static_cast<int>(i)};
  for (const RefGrant& g : grants)
    if (g.scheme == scheme && refHostMatches(g, host)) return {"port-mismatch"};
  for (const RefGrant& g : grants)
    if (refHostMatches(g, host)) return {"scheme-mismatch"};
  return {"no-grant"};
}

}  // namespace corral::policy::egress::reference
