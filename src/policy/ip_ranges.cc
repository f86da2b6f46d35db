// SPDX-License-Identifier: Apache-2.0
// Address classification: ordered range tables, first match wins.
#include "policy/ip_ranges.h"

namespace corral::policy::egress {
namespace {

struct Range {
  std::array<uint8_t, 16> prefix;
  int bits;
  AddressClass cls;
  std::string_view text;
};

bool inRange(const std::array<uint8_t, 16>& bytes, const Range& r) {
  for (int i = 0; i < r.bits; ++i) {
    int byte = i / 8, shift = 7 - i % 8;
    if (((bytes[byte] >> shift) & 1) != ((r.prefix[byte] >> shift) & 1)) return false;
  }
  return true;
}

// Order matters only where ranges nest: 255.255.255.255 before 240/4.
const Range kV4[] = {
    {{0}, 8, AddressClass::kUnspecified, "0.0.0.0/8"},
    {{10}, 8, AddressClass::kPrivate, "10.0.0.0/8"},
    {{100, 64}, 10, AddressClass::kSharedCgnat, "100.64.0.0/10"},
    {{127}, 8, AddressClass::kLoopback, "127.0.0.0/8"},
    {{169, 254}, 16, AddressClass::kLinkLocal, "169.254.0.0/16"},
    {{172, 16}, 12, AddressClass::kPrivate, "172.16.0.0/12"},
    {{192, 0, 0}, 24, AddressClass::kReserved, "192.0.0.0/24"},
    {{192, 0, 2}, 24, AddressClass::kDocumentation, "192.0.2.0/24"},
    {{192, 88, 99}, 24, AddressClass::kReserved, "192.88.99.0/24"},
    {{192, 168}, 16, AddressClass::kPrivate, "192.168.0.0/16"},
    {{198, 18}, 15, AddressClass::kReserved, "198.18.0.0/15"},
    {{198, 51, 100}, 24, AddressClass::kDocumentation, "198.51.100.0/24"},
    {{203, 0, 113}, 24, AddressClass::kDocumentation, "203.0.113.0/24"},
    {{224}, 4, AddressClass::kMulticast, "224.0.0.0/4"},
    {{255, 255, 255, 255}, 32, AddressClass::kBroadcast, "255.255.255.255/32"},
    {{240}, 4, AddressClass::kReserved, "240.0.0.0/4"},
};

// Prefixes whose IPv6 address carries an IPv4 destination at byte `at`.
struct Embedding {
  Range range;
  int at;
};
const Embedding kEmbeddings[] = {
    {{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 96, AddressClass::kPublic, "::ffff:0:0/96"}, 12},
    {{{0, 0x64, 0xff, 0x9b}, 96, AddressClass::kPublic, "64:ff9b::/96"}, 12},
    {{{0x20, 0x02}, 16, AddressClass::kPublic, "2002::/16"}, 2},
};

const Range kV6[] = {
    {{0}, 128, AddressClass::kUnspecified, "::/128"},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, AddressClass::kLoopback, "::1/128"},
    {{0xfc}, 7, AddressClass::kUniqueLocal, "fc00::/7"},
    {{0xfe, 0x80}, 10, AddressClass::kLinkLocal, "fe80::/10"},
    {{0xff}, 8, AddressClass::kMulticast, "ff00::/8"},
    {{0x20, 0x01, 0x0d, 0xb8}, 32, AddressClass::kDocumentation, "2001:db8::/32"},
    {{0x3f, 0xff}, 20, AddressClass::kDocumentation, "3fff::/20"},
    // IETF protocol assignments: Teredo (its client address is obfuscated, so it cannot be
    // classified), benchmarking, ORCHID. Nothing an agent needs.
    {{0x20, 0x01}, 23, AddressClass::kReserved, "2001::/23"},
};
// Everything outside global unicast is unallocated or special: IPv4-compatible ::/96,
// local-use NAT64 64:ff9b:1::/48, discard 100::/64, deprecated site-local fec0::/10.
const Range kGlobalUnicast = {{0x20}, 3, AddressClass::kPublic, "2000::/3"};

Classification classifyV4(const std::array<uint8_t, 16>& bytes) {
  for (const Range& r : kV4)
    if (inRange(bytes, r)) return {r.cls, r.text, ""};
  return {AddressClass::kPublic, "", ""};
}

}  // namespace

IpAddress ipv4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  IpAddress ip;
  ip.family = IpAddress::Family::kV4;
  ip.bytes[0] = a;
  ip.bytes[1] = b;
  ip.bytes[2] = c;
  ip.bytes[3] = d;
  return ip;
}

IpAddress ipv6(const std::array<uint8_t, 16>& bytes) {
  IpAddress ip;
  ip.family = IpAddress::Family::kV6;
  ip.bytes = bytes;
  return ip;
}

Classification classify(const IpAddress& ip) {
  if (ip.family == IpAddress::Family::kV4) return classifyV4(ip.bytes);
  for (const Range& r : kV6)
    if (r.bits == 128 && inRange(ip.bytes, r)) return {r.cls, r.text, ""};
  for (const Embedding& e : kEmbeddings) {
    if (!inRange(ip.bytes, e.range)) continue;
    std::array<uint8_t, 16> v4{};
    for (int i = 0; i < 4; ++i) v4[i] = ip.bytes[e.at + i];
    Classification c = classifyV4(v4);
    c.embedding = e.range.text;
    return c;
  }
  for (const Range& r : kV6)
    if (inRange(ip.bytes, r)) return {r.cls, r.text, ""};
  if (!inRange(ip.bytes, kGlobalUnicast)) return {AddressClass::kReserved, "outside 2000::/3", ""};
  return {AddressClass::kPublic, "", ""};
}

std::string_view className(AddressClass cls) {
  switch (cls) {
    case AddressClass::kPublic: return "public";
    case AddressClass::kUnspecified: return "unspecified";
    case AddressClass::kLoopback: return "loopback";
    case AddressClass::kPrivate: return "private";
    case AddressClass::kLinkLocal: return "link-local";
    case AddressClass::kSharedCgnat: return "shared (CGNAT)";
    case AddressClass::kUniqueLocal: return "unique-local";
    case AddressClass::kMulticast: return "multicast";
    case AddressClass::kBroadcast: return "broadcast";
    case AddressClass::kDocumentation: return "documentation";
    case AddressClass::kReserved: return "reserved";
  }
  return "reserved";
}

}  // namespace corral::policy::egress
