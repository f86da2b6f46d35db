// SPDX-License-Identifier: Apache-2.0
// Fuzzes egress host canonicalisation, grant parsing, the matcher (against the reference in
// egress_reference_test_util.h) and the forward/CONNECT/address decisions.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "policy/egress_decide.h"
#include "policy/egress_reference_test_util.h"

namespace corral::fuzz {
namespace {

namespace eg = policy::egress;
namespace reference = policy::egress::reference;

std::string show(const eg::Host& h) { return "host " + h.text; }

// What a canonical host may hold: nothing that ends an authority, a header or a string.
bool canonicalBytesOnly(const eg::Host& h) {
  std::string_view allowed = h.kind == eg::HostKind::kIpv6 ? "0123456789abcdef:" : "abcdefghijklmnopqrstuvwxyz0123456789-.";
  return !h.text.empty() && h.text.find_first_not_of(allowed) == std::string::npos;
}

void checkHost(std::string_view text) {
  auto h = eg::canonicalHost(text);
  PROPERTY_ONE_LINE_ERROR(h);
  if (!h.ok()) return;
  PROPERTY(canonicalBytesOnly(*h), show(*h));
  PROPERTY(h->text.size() <= eg::kMaxName, show(*h));
  if (h->kind == eg::HostKind::kName) {
    PROPERTY(h->text.front() != '.' && h->text.back() != '.' && h->text.find("..") == std::string::npos, show(*h));
  } else {
    PROPERTY(eg::formatIp(h->ip) == h->text, show(*h));
    PROPERTY((h->kind == eg::HostKind::kIpv4) == (h->ip.family == eg::IpAddress::Family::kV4), show(*h));
  }
  auto again = eg::canonicalHost(eg::authorityText(*h));
  PROPERTY(again.ok(), "canonical form refused: " + h->text + ": " + (again.ok() ? "" : again.error().message()));
  PROPERTY(*again == *h, "not idempotent: " + h->text + " -> " + again->text);
}

std::optional<eg::Grant> checkGrant(std::string_view text) {
  auto g = eg::parseGrant(text);
  PROPERTY_ONE_LINE_ERROR(g);
  if (!g.ok()) return std::nullopt;
  PROPERTY(g->port != 0, g->text());
  PROPERTY(!g->wildcard || (g->host.kind == eg::HostKind::kName && g->host.text.find('.') != std::string::npos), g->text());
  auto again = eg::parseGrant(g->text());
  PROPERTY(again.ok() && *again == *g, "grant text does not re-parse to itself: " + g->text());
  return *g;
}

reference::RefDecision refFor(const std::vector<eg::Grant>& grants, eg::Scheme scheme, const eg::Host& host, uint16_t port) {
  std::vector<reference::RefGrant> ref;
  for (const eg::Grant& g : grants)
    ref.push_back({std::string(eg::schemeName(g.scheme)), g.wildcard, eg::authorityText(g.host), g.port});
  return reference::refDecide(ref, std::string(eg::schemeName(scheme)), eg::authorityText(host), port);
}

// The request decision agrees with the reference whenever the request got as far as a host
// and port; an allowed decision always carries a destination matching its grant.
void checkRequest(const std::vector<eg::Grant>& grants, const eg::RequestDecision& r, eg::Scheme scheme,
                  std::string_view what) {
  PROPERTY(!r.decision.reason.empty() && noControlBytes(r.decision.reason), r.decision.reason);
  PROPERTY(r.decision.allowed() == r.destination.has_value(), std::string(what));
  if (!r.destination) return;
  const eg::Destination& d = *r.destination;
  PROPERTY(d.scheme == scheme && d.grant_index < grants.size(), std::string(what));
  PROPERTY(eg::grantMatches(grants[d.grant_index], d.scheme, d.host, d.port), std::string(what));
  reference::RefDecision want = refFor(grants, scheme, d.host, d.port);
  PROPERTY(want.rule == "allowed" && want.granted_by == static_cast<int>(d.grant_index), std::string(what));
}

void checkMatcher(const std::vector<eg::Grant>& grants, std::string_view authority) {
  auto a = eg::parseAuthority(authority);
  if (!a.ok()) return;
  for (eg::Scheme s : {eg::Scheme::kHttp, eg::Scheme::kHttps}) {
    uint16_t port = a->port.value_or(eg::defaultPort(s));
    eg::Decision d = eg::decide(grants, s, a->host, port);
    reference::RefDecision want = refFor(grants, s, a->host, port);
    PROPERTY(eg::ruleId(d.rule) == want.rule, "decide says " + std::string(eg::ruleId(d.rule)) + ", reference " +
                                                  want.rule + " for " + eg::authorityText(a->host));
    PROPERTY(!d.allowed() || static_cast<int>(*d.granted_by) == want.granted_by, eg::authorityText(a->host));
  }
}

void checkVet(const eg::Destination& dest, const std::vector<eg::IpAddress>& answer) {
  eg::DialDecision v = eg::vetAddresses(dest, answer);
  PROPERTY(v.decision.allowed() == v.dial.has_value(), v.decision.reason);
  PROPERTY(noControlBytes(v.decision.reason), v.decision.reason);
  if (!eg::needsResolution(dest)) {
    PROPERTY(v.dial && v.dial->address == dest.host.ip && v.dial->port == dest.port, "literal not dialled as granted");
    return;
  }
  bool all_public = !answer.empty();
  for (const eg::IpAddress& ip : answer) all_public = all_public && eg::classify(ip).cls == eg::AddressClass::kPublic;
  PROPERTY(v.decision.allowed() == all_public, v.decision.reason);
  if (v.dial) PROPERTY(v.dial->address == answer[0] && v.dial->port == dest.port, "dialled something not vetted");
}

std::vector<eg::IpAddress> answerFrom(std::string_view bytes) {
  std::vector<eg::IpAddress> out;
  for (size_t i = 0; i + 5 <= bytes.size() && out.size() < 4;) {
    std::array<uint8_t, 16> b{};
    bool v6 = bytes[i] & 1;
    size_t n = v6 ? 16 : 4;
    if (i + 1 + n > bytes.size()) break;
    for (size_t k = 0; k < n; ++k) b[k] = static_cast<uint8_t>(bytes[i + 1 + k]);
    out.push_back(v6 ? eg::ipv6(b) : eg::ipv4(b[0], b[1], b[2], b[3]));
    i += 1 + n;
  }
  return out;
}

}  // namespace
}  // namespace corral::fuzz

// Input: lines. Every line is tried as a host, a grant and a request; the valid grants form
// the grant list; the last line's bytes also serve as a DNS answer.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace eg = corral::policy::egress;
  using namespace corral::fuzz;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> lines;
  for (size_t start = 0; start <= text.size() && lines.size() < 12;) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  std::vector<eg::Grant> grants;
  for (std::string_view line : lines) {
    checkHost(line);
    if (auto g = checkGrant(line)) grants.push_back(*g);
  }
  std::vector<eg::IpAddress> answer = answerFrom(lines.back());
  for (std::string_view line : lines) {
    checkMatcher(grants, line);
    auto c = eg::decideConnect(grants, line);
    checkRequest(grants, c, eg::Scheme::kHttps, line);
    if (c.destination) checkVet(*c.destination, answer);
    std::string target = "http://" + std::string(line) + "/";
    std::string_view hosts[] = {line};
    auto f = eg::decideForward(grants, target, hosts, eg::HttpVersion::k11);
    checkRequest(grants, f, eg::Scheme::kHttp, target);
    if (f.destination) checkVet(*f.destination, answer);
    // The line as a whole target, Host taken from the first line.
    std::string_view first[] = {lines.front()};
    checkRequest(grants, eg::decideForward(grants, line, first, eg::HttpVersion::k11), eg::Scheme::kHttp, line);
  }
  return 0;
}
