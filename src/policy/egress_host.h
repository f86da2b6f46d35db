// SPDX-License-Identifier: Apache-2.0
// Egress host canonicalisation: one spelling per destination, decided before any grant check.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "policy/ip_ranges.h"

namespace corral::policy::egress {

inline constexpr size_t kMaxHostInput = 1024;  // bytes of raw input looked at, before IDNA
inline constexpr size_t kMaxName = 253;
inline constexpr size_t kMaxLabel = 63;

enum class HostKind : uint8_t { kName, kIpv4, kIpv6 };

struct Host {
  HostKind kind = HostKind::kName;
  // Canonical text: A-label name without a trailing dot ("xn--bcher-kva.example"), dotted
  // IPv4 ("127.0.0.1"), or RFC 5952 IPv6 without brackets ("::1").
  std::string text;
  IpAddress ip;  // meaningful for kIpv4 and kIpv6 only
  bool operator==(const Host&) const = default;
};

// Parses one host (no port) into its canonical form. Accepted: DNS names (lowercased, one
// trailing dot dropped, Unicode converted to A-labels by IDNA 2008/UTS 46 nontransitional,
// then letters, digits and '-' only); IPv4 in the WHATWG forms (127.1, 0x7f.0.0.1,
// 2130706433, 0177.0.0.1); IPv6 in brackets, where IPv4-mapped ::ffff:a.b.c.d becomes the
// IPv4 host a.b.c.d. Refused: NUL, controls, space, '%', '@', '/', '\', '?', '#', ':'
// outside brackets, a name whose last label is numeric but which is no IPv4 address,
// empty labels, labels over 63 or names over 253 bytes, '_', invalid IDNA.
Result<Host> canonicalHost(std::string_view text);

// The host as it appears in an authority: "[::1]" for IPv6, the text otherwise.
std::string authorityText(const Host& host);

// Dotted quad or RFC 5952 text (lowercase, longest zero run compressed, no brackets).
std::string formatIp(const IpAddress& ip);

// A decimal port 1..65535: digits only, no sign, space or leading zero.
Result<uint16_t> parsePort(std::string_view text);

// "host[:port]" or "[v6][:port]" cut into its raw parts; refuses userinfo ('@') and a
// bracket that does not close. port is nullopt when there is no ':'.
struct AuthorityParts {
  std::string_view host;
  std::optional<std::string_view> port;
};
Result<AuthorityParts> splitAuthority(std::string_view text);

struct Authority {
  Host host;
  std::optional<uint16_t> port;
};
// splitAuthority, canonicalHost and parsePort together.
Result<Authority> parseAuthority(std::string_view text);

}  // namespace corral::policy::egress
