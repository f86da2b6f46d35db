// SPDX-License-Identifier: Apache-2.0
// Reads the server name (SNI, RFC 6066) from the first bytes a client sends in a tunnel.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace corral::net {

// A ClientHello larger than this (reassembled over records) is refused as malformed.
inline constexpr size_t kMaxClientHello = size_t{64} * 1024;

enum class SniStatus : unsigned char {
  kNeedMore,   // not enough bytes yet to decide
  kNotTls,     // the first byte is no TLS handshake record
  kMalformed,  // a TLS record, but no well-formed ClientHello
  kAbsent,     // a well-formed ClientHello without a server_name extension
  kFound,      // host holds the host_name (raw bytes; canonicalise before comparing)
};

struct SniResult {
  SniStatus status = SniStatus::kNeedMore;
  std::string host;
  std::string reason;  // for kMalformed: what was wrong, one line
};

// bytes: everything the client has sent so far. Reassembles a ClientHello split over
// several handshake records; never reads past what it is given.
SniResult parseClientHelloSni(std::string_view bytes);

}  // namespace corral::net
