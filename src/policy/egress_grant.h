// SPDX-License-Identifier: Apache-2.0
// Egress grants ("https://api.example.com", "https://*.example.com:8443") and the matcher.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "policy/egress_host.h"

namespace corral::policy::egress {

// kTcp: any TCP protocol, reached through a tunnel (CONNECT or SOCKS5) whose bytes corral
// does not read; its grants always name the port.
enum class Scheme : uint8_t { kHttp, kHttps, kTcp };
std::string_view schemeName(Scheme scheme);
uint16_t defaultPort(Scheme scheme);  // http 80, https 443, tcp 0 (none: the port is required)

struct Grant {
  Scheme scheme = Scheme::kHttps;
  bool wildcard = false;  // "*.domain": names strictly below host.text, never the domain itself
  Host host;              // the exact host, or the wildcard's domain
  uint16_t port = 443;
  // Canonical text with the port always written: "https://*.example.com:443".
  std::string text() const;
  bool operator==(const Grant&) const = default;
};

// "scheme://host[:port][/]" or "scheme://*.domain[:port][/]". Scheme http, https or tcp (any
// case); port 1..65535, default by scheme, required for tcp; no userinfo, path, query or fragment. A
// wildcard's domain is a name of two or more labels. IP literals may be granted (that is
// how a loopback or private service is opened on purpose) but not 0.0.0.0/8, ::,
// multicast or broadcast, which are no TCP destination.
Result<Grant> parseGrant(std::string_view text);
// The same, with errors that name the rule but not the text: for URLs typed by an operator,
// which may carry a token in userinfo, path or query.
Result<Grant> parseGrantReasonOnly(std::string_view text);

// The variables that point a sandbox's clients at corral's egress proxy (set by corral,
// never by the caller): HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY, in both cases, and
// JAVA_TOOL_OPTIONS (the JVM ignores the others; JVM options go in JDK_JAVA_OPTIONS instead).
inline constexpr std::string_view kProxyEnvironmentNames[] = {"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy",
                                                              "ALL_PROXY",  "all_proxy",  "NO_PROXY",    "no_proxy",
                                                              "JAVA_TOOL_OPTIONS"};
// Each of those set for a proxy listening on 127.0.0.1:port inside the sandbox:
// HTTP(S)_PROXY "http://127.0.0.1:port", ALL_PROXY "socks5h://127.0.0.1:port" (the same
// port speaks SOCKS5), NO_PROXY/no_proxy empty (nothing is exempt), and JAVA_TOOL_OPTIONS
// with the JVM's http(s).proxyHost/proxyPort and socksProxyHost/socksProxyPort properties.
std::vector<std::string> proxyEnvironment(uint16_t port);

// Every grant, or the first error prefixed with its position ("grant 2: ...").
Result<std::vector<Grant>> parseGrants(std::span<const std::string> texts);

// Why a request was allowed or refused. The id (ruleId) is what the user sees in the
// X-Corral-Denied header; docs/egress-policy.md lists them all.
enum class Rule : uint8_t {
  kAllowed,
  kNoGrant,              // no grant names this host
  kSchemeMismatch,       // the host is granted, but only for the other scheme
  kPortMismatch,         // the host is granted for this scheme, but on other ports
  kBadTarget,            // request target or CONNECT authority malformed, userinfo, https
  kBadHost,              // the host does not canonicalise
  kBadPort,              // the port is not 1..65535
  kHostHeaderMissing,    // HTTP/1.1 forward request without Host
  kHostHeaderDuplicate,  // more than one Host header
  kHostHeaderMismatch,   // Host names another host:port than the absolute-form target
  kPrivateAddress,       // a granted name resolved into a refused range
  kNoAddress,            // a granted name resolved to nothing
};
std::string_view ruleId(Rule rule);  // "allowed", "no-grant", "port-mismatch", ...

struct Decision {
  Rule rule = Rule::kNoGrant;
  std::string reason;                 // one line, no control bytes: the 403 body after the id
  std::optional<size_t> granted_by;   // index into the grant list when allowed
  bool allowed() const { return rule == Rule::kAllowed; }
};
Decision refuse(Rule rule, std::string reason);

// True when g opens scheme://host:port.
bool grantMatches(const Grant& g, Scheme scheme, const Host& host, uint16_t port);

// Default deny: allowed by the first matching grant, else the most specific refusal
// (port-mismatch, then scheme-mismatch, then no-grant).
Decision decide(std::span<const Grant> grants, Scheme scheme, const Host& host, uint16_t port);

}  // namespace corral::policy::egress
