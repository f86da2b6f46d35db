// SPDX-License-Identifier: Apache-2.0
// The tunnel's SNI rule: does the ClientHello name the host the CONNECT was granted for?
#pragma once

#include <optional>
#include <string>

#include "net/tls_sni.h"
#include "policy/egress_host.h"

namespace corral::net {

struct TunnelRefusal {
  std::string rule;    // "sni-mismatch", "tls-malformed", "tunnel-not-tls"
  std::string reason;  // one line
};

// nullopt: the tunnel may open. A tunnel to a name needs an SNI that canonicalises to that
// very name. A tunnel to an IP literal may omit SNI (clients send none for literals); an
// SNI sent there must canonicalise to the same address, because a name would pick a
// virtual host at that address that no grant named. `hello` must not be kNeedMore.
std::optional<TunnelRefusal> checkTunnelSni(const policy::egress::Host& authority, const SniResult& hello);

}  // namespace corral::net
