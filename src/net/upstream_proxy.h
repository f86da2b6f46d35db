// SPDX-License-Identifier: Apache-2.0
// A parent proxy (`--upstream-proxy URL|env`): where the egress proxy sends what it has
// already allowed, and the Proxy-Authorization it adds on the host side. docs/egress-proxy.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/secret.h"
#include "net/lease_table.h"
#include "policy/egress_host.h"
#include "policy/ip_ranges.h"

namespace corral::net {

struct UpstreamProxy {
  policy::egress::Host host;  // the parent, canonical
  uint16_t port = 0;
  // "Basic <base64 user:password>", or empty: no Proxy-Authorization is sent. Never logged,
  // never in an event, never sent anywhere but the parent.
  std::unique_ptr<Secret> authorization;
  // NO_PROXY entries (env mode): lowercase names, ".domain" or "domain" (the domain and every
  // name below it), IP literals, or "*" (everything: the parent is never used).
  std::vector<std::string> no_proxy;
  // The parent's addresses, resolved once when the proxy starts (the operator named it, so no
  // range is refused: a corporate parent usually has a private address).
  std::vector<policy::egress::IpAddress> addresses;

  std::string text() const;  // "host:port": what events and logs name, never the credential
  // True when NO_PROXY exempts this destination: it is dialled directly.
  bool bypasses(const policy::egress::Host& dest) const;
};

// "http://[user[:password]@]host[:port]" (port default 3128, an optional trailing "/");
// userinfo is percent-decoded into a Basic authorization. Only http: corral speaks plain
// HTTP to the parent (CONNECT or an absolute-form request), as clients of HTTPS_PROXY do.
// Errors name the rule, never the URL: it may hold a password.
Result<UpstreamProxy> parseUpstreamProxy(std::string_view url);

// `--upstream-proxy env`: HTTPS_PROXY (https_proxy), else HTTP_PROXY (http_proxy), and
// NO_PROXY (no_proxy), from the host-side environment `env` (corral's own, never the
// sandbox's). Refused when neither proxy variable is set.
Result<UpstreamProxy> upstreamFromEnvironment(const EnvLookup& env);

// "Basic <base64(user_colon_password)>".
std::string basicAuthorization(std::string_view user_colon_password);

}  // namespace corral::net
