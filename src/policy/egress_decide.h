// SPDX-License-Identifier: Apache-2.0
// The egress decision for one proxied request: forward HTTP or CONNECT, then the address.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "policy/egress_grant.h"
#include "policy/egress_host.h"
#include "policy/egress_internal.h"
#include "policy/ip_ranges.h"

namespace corral::policy::egress {

enum class HttpVersion : uint8_t { k10, k11 };

// What a request was allowed to reach. The proxy resolves host (only when it is a name)
// once, passes the answers to vetAddresses and dials the DialTarget it gets back.
struct Destination {
  Scheme scheme = Scheme::kHttps;
  Host host;
  uint16_t port = 0;
  size_t grant_index = 0;
  std::string origin_form;  // forward requests: "/path?q" to send upstream ("/" if empty)
};

struct RequestDecision {
  Decision decision;
  std::optional<Destination> destination;  // set exactly when decision.allowed()
};

// A plain-HTTP proxy request. target is the absolute-form request target
// ("http://host[:port]/path?q"); host_headers holds the value of every Host header field
// (after the HTTP parser trimmed the optional whitespace). The target decides: HTTP/1.1
// needs exactly one Host, HTTP/1.0 at most one, and a Host that does not canonicalise to
// the target's host and port is refused. https:// targets are refused: https goes through
// CONNECT, where the client, not the proxy, speaks TLS.
RequestDecision decideForward(std::span<const Grant> grants, std::string_view target,
                              std::span<const std::string_view> host_headers, HttpVersion version);

// A CONNECT request, or a SOCKS5 CONNECT as "host:port" (net/socks5.h): authority-form
// "host:port", port required, no scheme. A tunnel is opaque, so only https and tcp grants
// open one: an http grant is reached by forward requests, where the Host header and path
// are visible. A tcp grant for host:port gives destination.scheme kTcp (bytes pass
// unread), else an https grant gives kHttps (the proxy checks the TLS SNI); tcp wins when
// both match.
RequestDecision decideConnect(std::span<const Grant> grants, std::string_view authority);

// The exact socket address to dial: family and bytes from ip, port in host order.
struct DialTarget {
  IpAddress address;
  uint16_t port = 0;
  bool operator==(const DialTarget&) const = default;
};

struct DialDecision {
  Decision decision;
  std::optional<DialTarget> dial;  // set exactly when decision.allowed()
  // The --allow-internal CIDR that admitted the dialled address ("10.0.0.0/8"); "" when
  // that address is public or the destination is a granted literal.
  std::string internal;
};

// True when dest.host is a name and the proxy must resolve it (once) before vetAddresses.
bool needsResolution(const Destination& dest);

// For an IP-literal destination: dials the literal; resolved is ignored (there is nothing
// to resolve), and any range is allowed because a grant named this very literal. For a
// name: refuses an empty answer (no-address) and refuses the whole answer if ANY address is
// outside the public range (private-address): a name that resolves to both public and
// private addresses is a rebinding attempt or a misconfiguration, and which one the client
// would have used is unknowable. Otherwise dials the first address. `internal` (the
// operator's --allow-internal CIDRs) widens "public" by the addresses internalAdmitting
// admits, and by nothing else: every other address still refuses the whole answer.
DialDecision vetAddresses(const Destination& dest, std::span<const IpAddress> resolved,
                          std::span<const Cidr> internal = {});

}  // namespace corral::policy::egress
