// SPDX-License-Identifier: Apache-2.0
// SOCKS5 (RFC 1928) as the egress proxy speaks it: no authentication, CONNECT only. Pure:
// bytes in, a parsed greeting or request out; the proxy decides the request like a CONNECT.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace corral::net::socks5 {

inline constexpr uint8_t kVersion = 5;

// Reply codes (RFC 1928 section 6).
enum class Reply : uint8_t {
  kSucceeded = 0,
  kGeneralFailure = 1,
  kNotAllowed = 2,  // connection not allowed by ruleset: every policy refusal
  kNetworkUnreachable = 3,
  kHostUnreachable = 4,  // a name that resolved to nothing
  kConnectionRefused = 5,
  kTtlExpired = 6,  // used for the connect timeout
  kCommandNotSupported = 7,  // BIND, UDP ASSOCIATE
  kAddressTypeNotSupported = 8,
};

enum class Status : uint8_t { kNeedMore, kDone, kError };

// The method-selection message: VER NMETHODS METHODS... The proxy offers only "no
// authentication required" (0x00): the sandbox has nothing to authenticate with that the
// proxy would believe, and its policy is the channel's, not a password's.
struct Greeting {
  Status status = Status::kNeedMore;
  size_t size = 0;              // bytes the greeting took, when kDone
  bool no_auth_offered = false; // method 0x00 among the client's
  std::string error;            // when kError (rule socks-malformed): one line
};
Greeting parseGreeting(std::string_view bytes);

// The reply to a greeting: 05 00, or 05 FF (no acceptable method) when 0x00 was not offered.
std::string greetingReply(bool accepted);

// A request: VER CMD RSV ATYP DST.ADDR DST.PORT.
struct Request {
  Status status = Status::kNeedMore;
  size_t size = 0;         // bytes the request took, when kDone
  uint8_t command = 0;     // 1 CONNECT, 2 BIND, 3 UDP ASSOCIATE
  // "host:port" for decideConnect: "a.b.c.d:p", "[v6]:p", or the domain as sent and ":p".
  // A domain is never resolved here: the proxy resolves it on the host, like a CONNECT's.
  std::string authority;
  // When kError: the rule id for the record ("socks-malformed", "socks-command-unsupported",
  // "socks-address-type", "bad-host"), a one-line reason, and the reply code to send.
  std::string rule;
  std::string error;
  Reply error_reply = Reply::kGeneralFailure;
};
Request parseRequest(std::string_view bytes);

// The name of a command for the record: "CONNECT", "BIND", "UDP-ASSOCIATE", "CMD-<n>".
std::string commandName(uint8_t command);

// A reply with BND.ADDR 0.0.0.0:0: where the proxy's upstream socket is bound is the host's
// business, not the sandbox's.
std::string reply(Reply code);

}  // namespace corral::net::socks5
