// SPDX-License-Identifier: Apache-2.0
// Forward and CONNECT decisions, and vetting of the resolved addresses.
#include "policy/egress_decide.h"

#include <algorithm>
#include <variant>

#include "policy/units.h"

namespace corral::policy::egress {
namespace {

RequestDecision refused(Rule rule, std::string reason) { return {refuse(rule, std::move(reason)), std::nullopt}; }

// Control bytes and spaces never belong in a request target or authority; the HTTP parser
// should have refused them already, and the policy does not rely on that.
bool hasControlOrSpace(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return true;
  }
  return false;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Host and port of an authority as a decision: bad-target for userinfo or broken brackets,
// bad-host, bad-port; the port is required when default_port is nullopt.
struct Endpoint {
  Host host;
  uint16_t port = 0;
};
std::variant<Endpoint, Decision> endpoint(std::string_view authority, std::optional<uint16_t> default_port) {
  auto parts = splitAuthority(authority);
  if (!parts) return refuse(Rule::kBadTarget, parts.error().message());
  auto host = canonicalHost(parts->host);
  if (!host) return refuse(Rule::kBadHost, host.error().message());
  Endpoint e{std::move(*host), 0};
  if (parts->port) {
    auto port = parsePort(*parts->port);
    if (!port) return refuse(Rule::kBadPort, port.error().message());
    e.port = *port;
  } else if (default_port) {
    e.port = *default_port;
  } else {
    return refuse(Rule::kBadTarget, "CONNECT '" + printable(authority) + "': needs an explicit port (host:port)");
  }
  return e;
}

RequestDecision grantedOrNot(std::span<const Grant> grants, Scheme scheme, Endpoint e, std::string origin_form) {
  Decision d = decide(grants, scheme, e.host, e.port);
  if (!d.allowed()) return {std::move(d), std::nullopt};
  Destination dest{scheme, std::move(e.host), e.port, *d.granted_by, std::move(origin_form)};
  return {std::move(d), std::move(dest)};
}

// A tunnel (CONNECT, SOCKS5) to host:port: a tcp grant opens it as opaque bytes, else an
// https grant opens it for TLS (the proxy checks the SNI). A tcp grant wins when both
// match: it already lets any bytes through, so checking the SNI would only refuse
// traffic the operator granted. Refusals: port-mismatch under either scheme, then
// scheme-mismatch (the host is granted for http only), then no-grant, with the https
// wording (what CONNECT has always said) unless the tcp one is more specific.
RequestDecision decideTunnel(std::span<const Grant> grants, Endpoint e) {
  Decision tcp = decide(grants, Scheme::kTcp, e.host, e.port);
  if (tcp.allowed()) return grantedOrNot(grants, Scheme::kTcp, std::move(e), "");
  RequestDecision r = grantedOrNot(grants, Scheme::kHttps, std::move(e), "");
  if (r.decision.allowed() || r.decision.rule == Rule::kPortMismatch) return r;
  if (tcp.rule == Rule::kPortMismatch) return {std::move(tcp), std::nullopt};
  if (r.decision.rule == Rule::kSchemeMismatch) r.decision.reason += "; CONNECT opens only https and tcp grants";
  return r;
}

}  // namespace

RequestDecision decideForward(std::span<const Grant> grants, std::string_view target,
                              std::span<const std::string_view> host_headers, HttpVersion version) {
  const std::string shown = "request target '" + printable(target) + "'";
  if (hasControlOrSpace(target)) return refused(Rule::kBadTarget, shown + ": has a control byte or space");
  size_t sep = target.find("://");
  if (sep == std::string_view::npos)
    return refused(Rule::kBadTarget, shown + ": a proxy request needs an absolute-form target (http://host/path)");
  std::string scheme = lower(target.substr(0, sep));
  if (scheme == "https") return refused(Rule::kBadTarget, shown + ": https goes through CONNECT, not a forward request");
  if (scheme != "http") return refused(Rule::kBadTarget, shown + ": only http:// is forwarded");
  std::string_view rest = target.substr(sep + 3);
  size_t end = std::min(rest.find_first_of("/?#"), rest.size());
  std::string_view authority = rest.substr(0, end), tail = rest.substr(end);
  if (tail.find('#') != std::string_view::npos) return refused(Rule::kBadTarget, shown + ": has a fragment");
  if (authority.empty()) return refused(Rule::kBadHost, shown + ": has no host");
  auto e = endpoint(authority, defaultPort(Scheme::kHttp));
  if (auto* d = std::get_if<Decision>(&e)) return {std::move(*d), std::nullopt};
  Endpoint& target_end = std::get<Endpoint>(e);

  if (host_headers.size() > 1) return refused(Rule::kHostHeaderDuplicate, "the request has more than one Host header");
  if (host_headers.empty()) {
    if (version == HttpVersion::k11) return refused(Rule::kHostHeaderMissing, "an HTTP/1.1 request needs a Host header");
  } else {
    // The Host header is only compared, never used: the target decides, and the proxy
    // dials what the target named.
    auto h = endpoint(host_headers[0], defaultPort(Scheme::kHttp));
    auto* he = std::get_if<Endpoint>(&h);
    if (he == nullptr || !(he->host == target_end.host) || he->port != target_end.port)
      return refused(Rule::kHostHeaderMismatch, "Host header '" + printable(host_headers[0]) +
                                                    "' does not name the target's " + authorityText(target_end.host) +
                                                    ":" + std::to_string(target_end.port));
  }
  std::string origin_form(tail);
  if (origin_form.empty() || origin_form[0] == '?') origin_form.insert(0, "/");
  return grantedOrNot(grants, Scheme::kHttp, std::move(target_end), std::move(origin_form));
}

RequestDecision decideConnect(std::span<const Grant> grants, std::string_view authority) {
  const std::string shown = "CONNECT '" + printable(authority) + "'";
  if (hasControlOrSpace(authority)) return refused(Rule::kBadTarget, shown + ": has a control byte or space");
  if (authority.find("://") != std::string_view::npos)
    return refused(Rule::kBadTarget, shown + ": takes host:port, not a URL");
  if (authority.empty()) return refused(Rule::kBadHost, shown + ": has no host");
  auto e = endpoint(authority, std::nullopt);
  if (auto* d = std::get_if<Decision>(&e)) return {std::move(*d), std::nullopt};
  return decideTunnel(grants, std::move(std::get<Endpoint>(e)));
}

bool needsResolution(const Destination& dest) { return dest.host.kind == HostKind::kName; }

DialDecision vetAddresses(const Destination& dest, std::span<const IpAddress> resolved, std::span<const Cidr> internal) {
  const std::string where = authorityText(dest.host) + ":" + std::to_string(dest.port);
  if (!needsResolution(dest))
    return {Decision{Rule::kAllowed, where + " is the granted literal", dest.grant_index}, DialTarget{dest.host.ip, dest.port}, ""};
  if (resolved.empty()) return {refuse(Rule::kNoAddress, dest.host.text + " resolved to no address"), std::nullopt, ""};
  std::string first_internal;
  for (size_t i = 0; i < resolved.size(); ++i) {
    const IpAddress& ip = resolved[i];
    Classification c = classify(ip);
    if (c.cls == AddressClass::kPublic) continue;
    if (auto admitted = internalAdmitting(internal, ip)) {
      if (i == 0) first_internal = internal[*admitted].text();
      continue;
    }
    std::string reason = dest.host.text + " resolved to " + formatIp(ip) + ", in ";
    reason.append(className(c.cls)).append(" range ");
    if (!c.embedding.empty()) reason.append(c.embedding).append(" carrying ");
    reason.append(c.range);
    if (internal.empty()) {
      reason.append(" (grant the IP literal to reach it on purpose)");
    } else if (std::string_view p = protectedRange(ip); !p.empty()) {
      reason.append(", a protected range that only an --allow-internal CIDR within ").append(p).append(" opens");
    } else {
      reason.append(", outside every --allow-internal CIDR");
    }
    return {refuse(Rule::kPrivateAddress, std::move(reason)), std::nullopt, ""};
  }
  std::string reason = where + " dials " + formatIp(resolved[0]);
  if (!first_internal.empty()) reason += " (internal " + first_internal + ")";
  return {Decision{Rule::kAllowed, std::move(reason), dest.grant_index}, DialTarget{resolved[0], dest.port},
          std::move(first_internal)};
}

}  // namespace corral::policy::egress
