// SPDX-License-Identifier: Apache-2.0
// Internal CIDRs: parsing, containment, and the protected ranges only an exact CIDR opens.
#include "policy/egress_internal.h"

#include "policy/egress_host.h"
#include "policy/units.h"

namespace corral::policy::egress {
namespace {

Error bad(std::string_view text, std::string_view why) {
  return Error(Errc::kInvalidArgument, "internal CIDR '" + printable(text) + "': " + std::string(why));
}

int maxBits(const IpAddress& ip) { return ip.family == IpAddress::Family::kV4 ? 32 : 128; }

bool bitAt(const IpAddress& ip, int i) { return ((ip.bytes[i / 8] >> (7 - i % 8)) & 1) != 0; }

struct Protected {
  const char* text;  // parsed once, below; each is a valid CIDR
  Cidr cidr;
};

// Narrowest first: the first range that holds an address is the one a CIDR must lie within.
// The metadata addresses are where cloud credentials are served; a CIDR that merely
// contains them (169.254.0.0/16, fd00::/8) is a statement about a network, not about them.
Protected kProtected[] = {
    {"169.254.169.254/32", {}},  // AWS, GCP, Azure, Oracle, OpenStack instance metadata
    {"169.254.170.2/32", {}},    // AWS ECS task credentials
    {"169.254.170.23/32", {}},   // AWS EKS pod identity
    {"100.100.100.200/32", {}},  // Alibaba Cloud metadata
    {"192.0.0.192/32", {}},      // Oracle Cloud legacy metadata
    {"fd00:ec2::254/128", {}},   // AWS instance metadata over IPv6
    {"fd00:ec2::23/128", {}},    // AWS EKS pod identity over IPv6
    {"fd20:ce::254/128", {}},    // GCP metadata over IPv6
    {"0.0.0.0/8", {}},           // "this host" on Linux
    {"127.0.0.0/8", {}},
    {"169.254.0.0/16", {}},
    {"::/128", {}},
    {"::1/128", {}},
    {"fe80::/10", {}},
};

const Protected* narrowestProtected(const IpAddress& ip) {
  static const bool parsed = [] {
    for (Protected& p : kProtected) p.cidr = *parseCidr(p.text);
    return true;
  }();
  (void)parsed;
  for (const Protected& p : kProtected)
    if (cidrContains(p.cidr, ip)) return &p;
  return nullptr;
}

bool within(const Cidr& inner, const Cidr& outer) {
  return inner.bits >= outer.bits && cidrContains(outer, inner.base);
}

}  // namespace

std::string Cidr::text() const { return formatIp(base) + "/" + std::to_string(bits); }

Result<Cidr> parseCidr(std::string_view text) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) return bad(text, "needs a prefix length (10.0.0.0/8)");
  const std::string_view addr = text.substr(0, slash), len = text.substr(slash + 1);
  if (addr.empty()) return bad(text, "has no address");
  const bool v6 = addr.find(':') != std::string_view::npos;
  auto host = canonicalHost(v6 ? "[" + std::string(addr) + "]" : std::string(addr));
  if (!host || host->kind == HostKind::kName) return bad(text, "the address is no IPv4 or IPv6 address");
  if (v6 && host->kind != HostKind::kIpv6) return bad(text, "an IPv4-mapped IPv6 base is refused; write the IPv4 CIDR");
  if (!v6 && host->text != addr) return bad(text, "write the IPv4 address as a dotted quad (" + host->text + ")");
  if (len.empty() || len.size() > 3 || len.find_first_not_of("0123456789") != std::string_view::npos ||
      (len.size() > 1 && len[0] == '0'))
    return bad(text, "the prefix length is no decimal number");
  Cidr c{host->ip, std::stoi(std::string(len))};
  if (c.bits > maxBits(c.base)) return bad(text, "the prefix length is larger than " + std::to_string(maxBits(c.base)));
  for (int i = c.bits; i < maxBits(c.base); ++i) {
    if (!bitAt(c.base, i)) continue;
    for (int j = c.bits; j < maxBits(c.base); ++j) c.base.bytes[j / 8] &= static_cast<uint8_t>(~(0x80 >> (j % 8)));
    return bad(text, "has host bits set (the network is " + c.text() + ")");
  }
  return c;
}

bool cidrContains(const Cidr& cidr, const IpAddress& ip) {
  if (cidr.base.family != ip.family) return false;
  for (int i = 0; i < cidr.bits; ++i)
    if (bitAt(cidr.base, i) != bitAt(ip, i)) return false;
  return true;
}

std::string_view protectedRange(const IpAddress& ip) {
  const Protected* p = narrowestProtected(ip);
  return p == nullptr ? std::string_view() : std::string_view(p->text);
}

std::optional<size_t> internalAdmitting(std::span<const Cidr> internal, const IpAddress& ip) {
  const Classification c = classify(ip);
  if (!c.embedding.empty() && c.cls != AddressClass::kPublic) return std::nullopt;
  if (c.cls == AddressClass::kMulticast || c.cls == AddressClass::kBroadcast) return std::nullopt;
  const Protected* p = narrowestProtected(ip);
  for (size_t i = 0; i < internal.size(); ++i) {
    if (!cidrContains(internal[i], ip)) continue;
    if (p != nullptr && !within(internal[i], p->cidr)) continue;
    return i;
  }
  return std::nullopt;
}

}  // namespace corral::policy::egress
