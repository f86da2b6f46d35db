// SPDX-License-Identifier: Apache-2.0
// IP addresses as values and the ranges the egress proxy refuses to dial by name.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace corral::policy::egress {

// An IPv4 or IPv6 address in network byte order. IPv4 uses bytes[0..3]; the rest stay 0 so
// that == compares addresses, not garbage.
struct IpAddress {
  enum class Family : uint8_t { kV4, kV6 };
  Family family = Family::kV4;
  std::array<uint8_t, 16> bytes{};
  bool operator==(const IpAddress&) const = default;
};

IpAddress ipv4(uint8_t a, uint8_t b, uint8_t c, uint8_t d);
IpAddress ipv6(const std::array<uint8_t, 16>& bytes);

// Only kPublic is dialled when the grant named a host; every other class is refused unless
// the grant itself is that IP literal (see docs/egress-policy.md).
enum class AddressClass : uint8_t {
  kPublic,
  kUnspecified,    // 0.0.0.0/8, ::  (0.0.0.0 reaches the local host on Linux)
  kLoopback,       // 127.0.0.0/8, ::1
  kPrivate,        // RFC 1918
  kLinkLocal,      // 169.254.0.0/16 (cloud metadata 169.254.169.254), fe80::/10
  kSharedCgnat,    // 100.64.0.0/10
  kUniqueLocal,    // fc00::/7
  kMulticast,      // 224.0.0.0/4, ff00::/8
  kBroadcast,      // 255.255.255.255
  kDocumentation,  // TEST-NETs, 2001:db8::/32, 3fff::/20: never a real destination
  kReserved,       // special-purpose or unallocated: 240/4, 198.18/15, outside 2000::/3, ...
};

struct Classification {
  AddressClass cls = AddressClass::kPublic;
  // The matching range ("169.254.0.0/16"), "" for public. For an IPv4 address embedded in
  // IPv6 (mapped, NAT64, 6to4) it is the IPv4 range and `embedding` names the IPv6 prefix.
  std::string_view range;
  std::string_view embedding;
};

// First matching range wins; an IPv4 address inside ::ffff:0:0/96, 64:ff9b::/96 or
// 2002::/16 is classified as that IPv4 address, because that is where a packet to it goes.
Classification classify(const IpAddress& ip);

// "loopback", "private", "link-local", ... as shown in refusals.
std::string_view className(AddressClass cls);

}  // namespace corral::policy::egress
