// SPDX-License-Identifier: Apache-2.0
// Internal CIDRs (--allow-internal): the private ranges a granted name may resolve into.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "policy/ip_ranges.h"

namespace corral::policy::egress {

// An address prefix: base has every bit past `bits` zero.
struct Cidr {
  IpAddress base;
  int bits = 0;
  std::string text() const;  // "10.0.0.0/8", "fd00::/8"
  bool operator==(const Cidr&) const = default;
};

// "a.b.c.d/N" (dotted quad, N 0..32) or "v6/N" (no brackets, N 0..128). Refused: other IPv4
// spellings, an IPv4-mapped IPv6 base, a missing or padded length, and host bits set
// ("10.0.0.1/8" is ambiguous: the operator may have meant the host or the network).
Result<Cidr> parseCidr(std::string_view text);

bool cidrContains(const Cidr& cidr, const IpAddress& ip);

// Which CIDR admits ip as a destination of a granted name; nullopt when none does. A CIDR
// admits the addresses it contains, except that an address in a protected range (0.0.0.0/8,
// loopback, link-local, a cloud metadata address such as 169.254.169.254 or fd00:ec2::254)
// is admitted only by a CIDR that lies within the narrowest protected range holding it:
// 10.0.0.0/8 or 0.0.0.0/0 never open 127.0.0.1, 169.254.0.0/16 does not open the metadata
// address, only 169.254.169.254/32 does. Multicast, broadcast and IPv4 carried in IPv6
// (mapped, NAT64, 6to4) are never admitted: they are no TCP destination, or not this one.
std::optional<size_t> internalAdmitting(std::span<const Cidr> internal, const IpAddress& ip);

// The protected range that ip falls in ("169.254.169.254/32"), "" when none.
std::string_view protectedRange(const IpAddress& ip);

}  // namespace corral::policy::egress
