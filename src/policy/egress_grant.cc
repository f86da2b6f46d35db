// SPDX-License-Identifier: Apache-2.0
// Grant parsing and matching.
#include "policy/egress_grant.h"

#include "policy/units.h"

namespace corral::policy::egress {
namespace {

// The reason only: parseGrant adds the text, parseGrantReasonOnly does not.
Error bad(std::string_view, std::string_view why) { return Error(Errc::kInvalidArgument, std::string(why)); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool hostMatches(const Grant& g, const Host& host) {
  if (!g.wildcard) return g.host == host;
  const std::string& d = g.host.text;
  const std::string& h = host.text;
  return host.kind == HostKind::kName && h.size() > d.size() + 1 &&
         h.compare(h.size() - d.size(), d.size(), d) == 0 && h[h.size() - d.size() - 1] == '.';
}

std::string requestText(Scheme scheme, const Host& host, uint16_t port) {
  return std::string(schemeName(scheme)) + "://" + authorityText(host) + ":" + std::to_string(port);
}

}  // namespace

std::string_view schemeName(Scheme scheme) {
  switch (scheme) {
    case Scheme::kHttp: return "http";
    case Scheme::kHttps: return "https";
    case Scheme::kTcp: return "tcp";
  }
  return "https";
}
uint16_t defaultPort(Scheme scheme) {
  switch (scheme) {
    case Scheme::kHttp: return 80;
    case Scheme::kHttps: return 443;
    case Scheme::kTcp: return 0;
  }
  return 443;
}

std::string Grant::text() const {
  return std::string(schemeName(scheme)) + "://" + (wildcard ? "*." : "") + authorityText(host) + ":" +
         std::to_string(port);
}

namespace {

// echo: errors may quote the text (parseGrant wraps them with it anyway); otherwise a
// malformed authority gets a fixed reason, as parseAuthority's own message quotes it.
Result<Grant> parseGrantText(std::string_view text, bool echo) {
  size_t sep = text.find("://");
  if (sep == std::string_view::npos) return bad(text, "expected scheme://host[:port]");
  std::string scheme = lower(text.substr(0, sep));
  Grant g;
  if (scheme == "http") g.scheme = Scheme::kHttp;
  else if (scheme == "https") g.scheme = Scheme::kHttps;
  else if (scheme == "tcp") g.scheme = Scheme::kTcp;
  else return bad(text, "the scheme must be http, https or tcp");
  std::string_view rest = text.substr(sep + 3);
  if (rest.find_first_of("?#") != std::string_view::npos) return bad(text, "a grant has no query or fragment");
  size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    if (slash + 1 != rest.size()) return bad(text, "a grant names a host, not a path");
    rest = rest.substr(0, slash);
  }
  if (rest.substr(0, 2) == "*.") {
    g.wildcard = true;
    rest.remove_prefix(2);
  }
  if (rest.find('*') != std::string_view::npos) return bad(text, "'*' is allowed only as a leading '*.' label");
  if (rest.find('@') != std::string_view::npos) return bad(text, "userinfo (user@) is not allowed in a grant");
  auto authority = parseAuthority(rest);
  if (!authority) return echo ? authority.error() : bad(text, "the host or port is not valid (see docs/egress-policy.md)");
  g.host = std::move(authority->host);
  // A tcp grant names no protocol, so there is no port to default to: an implied one would
  // be a guess about what the operator meant to open.
  if (g.scheme == Scheme::kTcp && !authority->port) return bad(text, "a tcp grant needs a port (tcp://host:port)");
  g.port = authority->port.value_or(defaultPort(g.scheme));
  if (g.wildcard) {
    if (g.host.kind != HostKind::kName) return bad(text, "a wildcard cannot cover an IP address");
    // "*.com" would open a whole TLD. A public-suffix list would also catch "*.co.uk";
    // corral has none, see docs/egress-policy.md.
    if (g.host.text.find('.') == std::string::npos) return bad(text, "a wildcard needs a domain of two or more labels");
  }
  if (g.host.kind != HostKind::kName) {
    AddressClass cls = classify(g.host.ip).cls;
    if (cls == AddressClass::kUnspecified || cls == AddressClass::kMulticast || cls == AddressClass::kBroadcast)
      return bad(text, "a " + std::string(className(cls)) + " address is not a TCP destination");
  }
  return g;
}

}  // namespace

Result<Grant> parseGrant(std::string_view text) {
  auto grant = parseGrantText(text, true);
  if (!grant) return grant.error().wrap("grant '" + printable(text) + "'");
  return grant;
}

Result<Grant> parseGrantReasonOnly(std::string_view text) { return parseGrantText(text, false); }

Result<std::vector<Grant>> parseGrants(std::span<const std::string> texts) {
  std::vector<Grant> grants;
  for (size_t i = 0; i < texts.size(); ++i) {
    auto g = parseGrant(texts[i]);
    if (!g) return g.error().wrap("grant " + std::to_string(i + 1));
    grants.push_back(std::move(*g));
  }
  return grants;
}

std::string_view ruleId(Rule rule) {
  switch (rule) {
    case Rule::kAllowed: return "allowed";
    case Rule::kNoGrant: return "no-grant";
    case Rule::kSchemeMismatch: return "scheme-mismatch";
    case Rule::kPortMismatch: return "port-mismatch";
    case Rule::kBadTarget: return "bad-target";
    case Rule::kBadHost: return "bad-host";
    case Rule::kBadPort: return "bad-port";
    case Rule::kHostHeaderMissing: return "host-header-missing";
    case Rule::kHostHeaderDuplicate: return "host-header-duplicate";
    case Rule::kHostHeaderMismatch: return "host-header-mismatch";
    case Rule::kPrivateAddress: return "private-address";
    case Rule::kNoAddress: return "no-address";
  }
  return "no-grant";
}

Decision refuse(Rule rule, std::string reason) { return Decision{rule, std::move(reason), std::nullopt}; }

bool grantMatches(const Grant& g, Scheme scheme, const Host& host, uint16_t port) {
  return g.scheme == scheme && g.port == port && hostMatches(g, host);
}

Decision decide(std::span<const Grant> grants, Scheme scheme, const Host& host, uint16_t port) {
  const std::string wanted = requestText(scheme, host, port);
  std::optional<size_t> same_scheme, other_scheme;
  for (size_t i = 0; i < grants.size(); ++i) {
    const Grant& g = grants[i];
    if (!hostMatches(g, host)) continue;
    if (g.scheme == scheme && g.port == port) return Decision{Rule::kAllowed, wanted + " granted by " + g.text(), i};
    if (g.scheme == scheme && !same_scheme) same_scheme = i;
    if (g.scheme != scheme && !other_scheme) other_scheme = i;
  }
  if (same_scheme)
    return refuse(Rule::kPortMismatch, wanted + ": this port is not granted (" + grants[*same_scheme].text() + " is)");
  if (other_scheme)
    return refuse(Rule::kSchemeMismatch,
                  wanted + ": this scheme is not granted (" + grants[*other_scheme].text() + " is)");
  return refuse(Rule::kNoGrant, wanted + ": no grant names this host");
}

std::vector<std::string> proxyEnvironment(uint16_t port) {
  const std::string where = "127.0.0.1:" + std::to_string(port);
  std::vector<std::string> env;
  for (std::string_view name : kProxyEnvironmentNames) {
    std::string value = "http://" + where;
    if (name == "NO_PROXY" || name == "no_proxy") value.clear();
    // The same port speaks SOCKS5, for clients that reach non-HTTP protocols through
    // ALL_PROXY; socks5h: the client sends the name, which the proxy resolves on the host.
    if (name == "ALL_PROXY" || name == "all_proxy") value = "socks5h://" + where;
    // The JVM reads no proxy variable, only its own system properties; every JVM started in
    // the sandbox picks these up (and says so on stderr: "Picked up JAVA_TOOL_OPTIONS").
    if (name == "JAVA_TOOL_OPTIONS") {
      const std::string p = std::to_string(port);
      // nonProxyHosts empty: the JVM's default exempts localhost and 127.*, and there is
      // nothing to reach directly (the sandbox has loopback only; granted literals go through).
      value = "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=" + p;
      value += " -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=" + p;
      value += " -Dhttp.nonProxyHosts=";
      // java.net.Socket (JDBC drivers and other raw-socket clients) asks the same selector for
      // socket:// URIs, which only socksProxyHost answers: SOCKS5 on the same port, the name
      // sent unresolved. http(s).proxyHost take precedence for http and https, so those stay
      // HTTP proxying. socksNonProxyHosts keeps its default (localhost|127.*|[::1]), so a
      // socket to a server inside the sandbox stays direct.
      value += " -DsocksProxyHost=127.0.0.1 -DsocksProxyPort=" + p;
    }
    env.push_back(std::string(name) + "=" + value);
  }
  return env;
}

}  // namespace corral::policy::egress
