// SPDX-License-Identifier: Apache-2.0
// SOCKS5 greeting and request parsing (RFC 1928 sections 3-5), and the replies.
#include "net/socks5.h"

#include <cstdio>

namespace corral::net::socks5 {
namespace {

uint8_t at(std::string_view b, size_t i) { return static_cast<uint8_t>(b[i]); }

Request failed(std::string rule, std::string error, Reply reply) {
  Request r;
  r.status = Status::kError;
  r.rule = std::move(rule);
  r.error = std::move(error);
  r.error_reply = reply;
  return r;
}

std::string ipv4Text(std::string_view b) {
  char out[16];
  std::snprintf(out, sizeof out, "%u.%u.%u.%u", at(b, 0), at(b, 1), at(b, 2), at(b, 3));
  return out;
}

// Eight groups, uncompressed: canonicalHost (through decideConnect) gives the canonical form.
std::string ipv6Text(std::string_view b) {
  std::string out = "[";
  for (size_t g = 0; g < 8; ++g) {
    char group[8];
    std::snprintf(group, sizeof group, g == 0 ? "%x" : ":%x", (at(b, 2 * g) << 8) | at(b, 2 * g + 1));
    out += group;
  }
  return out + "]";
}

}  // namespace

Greeting parseGreeting(std::string_view bytes) {
  Greeting g;
  if (bytes.size() < 2) return g;
  if (at(bytes, 0) != kVersion) {
    g.status = Status::kError;
    g.error = "not SOCKS version 5";
    return g;
  }
  const size_t n = at(bytes, 1);
  if (n == 0) {
    g.status = Status::kError;
    g.error = "the greeting offers no authentication method";
    return g;
  }
  if (bytes.size() < 2 + n) return g;
  for (size_t i = 0; i < n; ++i)
    if (at(bytes, 2 + i) == 0x00) g.no_auth_offered = true;
  g.status = Status::kDone;
  g.size = 2 + n;
  return g;
}

std::string greetingReply(bool accepted) { return std::string{char(kVersion), accepted ? char(0x00) : char(0xff)}; }

Request parseRequest(std::string_view bytes) {
  if (bytes.size() < 5) return {};
  if (at(bytes, 0) != kVersion) return failed("socks-malformed", "the request is not SOCKS version 5", Reply::kGeneralFailure);
  if (at(bytes, 2) != 0) return failed("socks-malformed", "the request's reserved byte is not 0", Reply::kGeneralFailure);
  const uint8_t atyp = at(bytes, 3);
  size_t addr_len = 0;
  switch (atyp) {
    case 1: addr_len = 4; break;
    case 3: addr_len = 1 + size_t{at(bytes, 4)}; break;
    case 4: addr_len = 16; break;
    default:
      return failed("socks-address-type", "address type " + std::to_string(atyp) + " is not IPv4, a domain name or IPv6",
                    Reply::kAddressTypeNotSupported);
  }
  const size_t size = 4 + addr_len + 2;
  if (bytes.size() < size) return {};
  Request r;
  r.command = at(bytes, 1);
  // Only CONNECT: BIND would open a listening port for the sandbox on the host side, and UDP
  // ASSOCIATE would carry datagrams the policy has no grants for.
  if (r.command != 1) {
    Request f = failed("socks-command-unsupported", "SOCKS " + commandName(r.command) + " is not supported (CONNECT only)",
                       Reply::kCommandNotSupported);
    f.command = r.command;
    return f;
  }
  const std::string_view addr = bytes.substr(4, addr_len);
  const uint16_t port = static_cast<uint16_t>((at(bytes, 4 + addr_len) << 8) | at(bytes, 5 + addr_len));
  std::string host;
  if (atyp == 1) {
    host = ipv4Text(addr);
  } else if (atyp == 4) {
    host = ipv6Text(addr);
  } else {
    host = std::string(addr.substr(1));
    if (host.empty()) return failed("bad-host", "the SOCKS domain name is empty", Reply::kNotAllowed);
    // The authority is split at its last ':' and brackets mean IPv6: a domain holding either
    // would be read as another host or port than the one sent.
    if (host.find_first_of(":[]") != std::string::npos)
      return failed("bad-host", "the SOCKS domain name holds ':', '[' or ']'", Reply::kNotAllowed);
  }
  r.status = Status::kDone;
  r.size = size;
  r.authority = host + ":" + std::to_string(port);
  return r;
}

std::string commandName(uint8_t command) {
  switch (command) {
    case 1: return "CONNECT";
    case 2: return "BIND";
    case 3: return "UDP-ASSOCIATE";
    default: return "CMD-" + std::to_string(command);
  }
}

std::string reply(Reply code) {
  return std::string{char(kVersion), char(code), 0, 1, 0, 0, 0, 0, 0, 0};
}

}  // namespace corral::net::socks5
