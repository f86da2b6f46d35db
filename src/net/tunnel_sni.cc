// SPDX-License-Identifier: Apache-2.0
// The SNI rule for CONNECT tunnels, as a pure function of the decided host and the hello.
#include "net/tunnel_sni.h"

#include "net/http_request.h"

namespace corral::net {

namespace eg = policy::egress;

std::optional<TunnelRefusal> checkTunnelSni(const eg::Host& authority, const SniResult& hello) {
  const std::string shown = eg::authorityText(authority);
  switch (hello.status) {
    case SniStatus::kNeedMore:
    case SniStatus::kMalformed:
      return TunnelRefusal{"tls-malformed", hello.reason.empty() ? "the ClientHello is incomplete" : hello.reason};
    case SniStatus::kNotTls:
      return TunnelRefusal{"tunnel-not-tls", "the tunnel's first bytes are not a TLS ClientHello"};
    case SniStatus::kAbsent:
      if (authority.kind == eg::HostKind::kName)
        return TunnelRefusal{"sni-mismatch", "the ClientHello names no server (SNI) for the tunnel to " + shown};
      return std::nullopt;
    case SniStatus::kFound: {
      auto sni = eg::canonicalHost(hello.host);
      if (!sni.ok())
        return TunnelRefusal{"sni-mismatch", "SNI '" + printable(hello.host) + "' is no valid host: " + sni.error().message()};
      if (!(*sni == authority))
        return TunnelRefusal{"sni-mismatch", "SNI '" + printable(hello.host) + "' names another host than the CONNECT authority " + shown};
      return std::nullopt;
    }
  }
  return TunnelRefusal{"tls-malformed", "unreachable"};
}

}  // namespace corral::net
