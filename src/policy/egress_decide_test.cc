// SPDX-License-Identifier: Apache-2.0
// Tests for the per-request decision: the published grant x request vectors, forward and
// CONNECT details, address vetting. DISABLED_PrintVectorsMarkdown writes docs/egress-vectors.md.
#include "policy/egress_decide.h"

#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "policy/egress_vectors_test_data.h"
#include "policy/units.h"

namespace corral::policy::egress {
namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  if (s.empty()) return out;
  size_t start = 0;
  while (true) {
    size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

IpAddress address(std::string_view text) {
  auto h = canonicalHost(text.find(':') != std::string_view::npos ? "[" + std::string(text) + "]" : std::string(text));
  EXPECT_TRUE(h.ok() && h->kind != HostKind::kName) << text;
  return h.ok() ? h->ip : IpAddress{};
}

std::vector<IpAddress> addresses(std::string_view list) {
  std::vector<IpAddress> out;
  for (std::string_view a : split(list, ' ')) {
    // Mapped answers stay IPv6 here, as a resolver would hand them over.
    if (a.rfind("::ffff:", 0) == 0) {
      IpAddress v4 = address(a.substr(7));
      out.push_back(ipv6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, v4.bytes[0], v4.bytes[1], v4.bytes[2], v4.bytes[3]}));
    } else {
      out.push_back(address(a));
    }
  }
  return out;
}

std::string dialText(const DialTarget& t) {
  std::string a = formatIp(t.address);
  if (t.address.family == IpAddress::Family::kV6) a = "[" + a + "]";
  return a + ":" + std::to_string(t.port);
}

struct Outcome {
  std::string rule;
  std::string dial;
  std::string reason;
};

Outcome run(const vectors::DecideVector& v) {
  std::vector<Grant> grants;
  for (std::string_view t : split(v.grants, ' ')) {
    auto g = parseGrant(t);
    EXPECT_TRUE(g.ok()) << t;
    if (g.ok()) grants.push_back(*g);
  }
  RequestDecision r;
  if (v.method == "CONNECT") {
    r = decideConnect(grants, v.target);
  } else {
    std::vector<std::string_view> hosts = v.hosts == "-" ? std::vector<std::string_view>{} : split(v.hosts, '|');
    if (v.hosts.empty()) hosts = {""};
    r = decideForward(grants, v.target, hosts, v.method == "GET/1.0" ? HttpVersion::k10 : HttpVersion::k11);
  }
  EXPECT_EQ(r.decision.allowed(), r.destination.has_value()) << v.target;
  if (!r.decision.allowed()) return {std::string(ruleId(r.decision.rule)), "", r.decision.reason};
  std::vector<IpAddress> resolved = addresses(v.resolved);
  DialDecision d = vetAddresses(*r.destination, resolved);
  EXPECT_EQ(d.decision.allowed(), d.dial.has_value()) << v.target;
  return {std::string(ruleId(d.decision.rule)), d.dial ? dialText(*d.dial) : "", d.decision.reason};
}

bool oneLine(const std::string& s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  return !s.empty();
}

TEST(Decide, PublishedGrantTimesRequestVectors) {
  for (const auto& v : vectors::kDecisions) {
    Outcome o = run(v);
    std::string what = std::string(v.method) + " " + printable(v.target) + " with [" + std::string(v.grants) + "]";
    EXPECT_EQ(o.rule, v.expect) << what << ": " << o.reason;
    EXPECT_EQ(o.dial, v.dial) << what;
    EXPECT_TRUE(oneLine(o.reason)) << what << ": the reason must be one printable line";
  }
}

TEST(DecideForward, OriginFormIsWhatFollowsTheAuthority) {
  auto g = parseGrants(std::vector<std::string>{"http://example.com"});
  ASSERT_TRUE(g.ok());
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"http://example.com", "/"},
      {"http://example.com/", "/"},
      {"http://example.com?q=1", "/?q=1"},
      {"http://example.com/a/b?c=d&e", "/a/b?c=d&e"},
  };
  for (const auto& [target, origin] : cases) {
    std::string_view hosts[] = {"example.com"};
    RequestDecision r = decideForward(*g, target, hosts, HttpVersion::k11);
    ASSERT_TRUE(r.destination) << target << ": " << r.decision.reason;
    EXPECT_EQ(r.destination->origin_form, origin);
    EXPECT_EQ(r.destination->scheme, Scheme::kHttp);
    EXPECT_EQ(r.destination->port, 80);
  }
}

TEST(DecideConnect, SchemeMismatchExplainsThatTunnelsNeedHttpsGrants) {
  auto g = parseGrants(std::vector<std::string>{"http://example.com"});
  ASSERT_TRUE(g.ok());
  RequestDecision r = decideConnect(*g, "example.com:80");
  EXPECT_EQ(r.decision.reason,
            "https://example.com:80: this scheme is not granted (http://example.com:80 is); CONNECT opens only https and tcp grants");
  EXPECT_EQ(r.decision.rule, Rule::kSchemeMismatch);
}

// A tcp grant makes the tunnel opaque (no SNI check); an https grant keeps it TLS-only.
TEST(DecideConnect, TcpGrantsOpenOpaqueTunnelsAndWinOverHttps) {
  auto g = parseGrants(std::vector<std::string>{"https://h.example.com:443", "tcp://h.example.com:443", "tcp://db.example.com:5432"});
  ASSERT_TRUE(g.ok());
  RequestDecision both = decideConnect(*g, "h.example.com:443");
  ASSERT_TRUE(both.destination) << both.decision.reason;
  EXPECT_EQ(both.destination->scheme, Scheme::kTcp);
  EXPECT_EQ(both.destination->grant_index, 1u);
  RequestDecision db = decideConnect(*g, "db.example.com:5432");
  ASSERT_TRUE(db.destination) << db.decision.reason;
  EXPECT_EQ(db.destination->scheme, Scheme::kTcp);
  auto https_only = parseGrants(std::vector<std::string>{"https://h.example.com"});
  ASSERT_TRUE(https_only.ok());
  RequestDecision tls = decideConnect(*https_only, "h.example.com:443");
  ASSERT_TRUE(tls.destination);
  EXPECT_EQ(tls.destination->scheme, Scheme::kHttps);
  // The refusal names the tcp grant when it is the more specific one.
  RequestDecision port = decideConnect(*g, "db.example.com:5433");
  EXPECT_EQ(port.decision.rule, Rule::kPortMismatch);
  EXPECT_EQ(port.decision.reason, "tcp://db.example.com:5433: this port is not granted (tcp://db.example.com:5432 is)");
}

Destination named(std::string_view name, uint16_t port) {
  auto h = canonicalHost(name);
  EXPECT_TRUE(h.ok());
  return Destination{Scheme::kHttps, *h, port, 0, ""};
}

TEST(VetAddresses, DialsTheFirstAddressOfAnAllPublicAnswer) {
  std::vector<IpAddress> answer = {address("93.184.216.34"), address("2606:2800::1")};
  DialDecision d = vetAddresses(named("example.com", 443), answer);
  ASSERT_TRUE(d.dial);
  EXPECT_EQ(*d.dial, (DialTarget{address("93.184.216.34"), 443}));
  EXPECT_EQ(d.decision.reason, "example.com:443 dials 93.184.216.34");
}

TEST(VetAddresses, OnePrivateAddressRefusesTheWholeAnswerWhereverItIs) {
  for (size_t at = 0; at < 3; ++at) {
    std::vector<IpAddress> answer = {address("93.184.216.34"), address("93.184.216.35"), address("8.8.8.8")};
    answer[at] = address("10.1.2.3");
    DialDecision d = vetAddresses(named("example.com", 443), answer);
    EXPECT_EQ(d.decision.rule, Rule::kPrivateAddress) << "private address at " << at;
    EXPECT_FALSE(d.dial);
    EXPECT_EQ(d.decision.reason,
              "example.com resolved to 10.1.2.3, in private range 10.0.0.0/8 (grant the IP literal to reach it on purpose)");
  }
}

TEST(VetAddresses, MappedAnswerNamesTheEmbeddedRange) {
  std::vector<IpAddress> answer = {ipv6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 169, 254, 169, 254})};
  DialDecision d = vetAddresses(named("example.com", 443), answer);
  EXPECT_EQ(d.decision.reason,
            "example.com resolved to ::ffff:a9fe:a9fe, in link-local range ::ffff:0:0/96 carrying 169.254.0.0/16 "
            "(grant the IP literal to reach it on purpose)");
}

TEST(VetAddresses, LiteralDestinationIgnoresAnyAnswerAndDialsTheLiteral) {
  Destination dest = named("127.0.0.1", 8080);
  EXPECT_FALSE(needsResolution(dest));
  EXPECT_TRUE(needsResolution(named("example.com", 443)));
  std::vector<IpAddress> bogus = {address("8.8.8.8")};
  DialDecision d = vetAddresses(dest, bogus);
  ASSERT_TRUE(d.dial);
  EXPECT_EQ(*d.dial, (DialTarget{ipv4(127, 0, 0, 1), 8080}));
}

TEST(VetAddresses, PublishedInternalCidrVectors) {
  auto g = parseGrants(std::vector<std::string>{"https://registry.corp.example"});
  ASSERT_TRUE(g.ok());
  for (const auto& v : vectors::kInternal) {
    std::vector<Cidr> internal;
    for (std::string_view t : split(v.internal, ' ')) {
      auto c = parseCidr(t);
      ASSERT_TRUE(c.ok()) << t;
      internal.push_back(*c);
    }
    RequestDecision r = decideConnect(*g, "registry.corp.example:443");
    ASSERT_TRUE(r.destination) << r.decision.reason;
    DialDecision d = vetAddresses(*r.destination, addresses(v.resolved), internal);
    const std::string what = "answer [" + std::string(v.resolved) + "] with internal [" + std::string(v.internal) + "]";
    EXPECT_EQ(ruleId(d.decision.rule), v.expect) << what << ": " << d.decision.reason;
    EXPECT_EQ(d.dial ? dialText(*d.dial) : "", v.dial) << what;
    EXPECT_EQ(d.internal, v.via) << what;
    EXPECT_TRUE(oneLine(d.decision.reason)) << what;
    // The CIDR that admitted the address is named in the reason the log shows.
    if (!v.via.empty()) {
      EXPECT_NE(d.decision.reason.find("(internal " + std::string(v.via) + ")"), std::string::npos) << what;
    }
  }
}

// The control: the same answers without any CIDR are all refused or public, so the table's
// allowed rows are the CIDRs' doing.
TEST(VetAddresses, WithoutInternalCidrsNoPrivateRowOfTheTableIsAllowed) {
  auto g = parseGrants(std::vector<std::string>{"https://registry.corp.example"});
  ASSERT_TRUE(g.ok());
  for (const auto& v : vectors::kInternal) {
    if (v.via.empty()) continue;
    RequestDecision r = decideConnect(*g, "registry.corp.example:443");
    ASSERT_TRUE(r.destination);
    DialDecision d = vetAddresses(*r.destination, addresses(v.resolved));
    EXPECT_EQ(d.decision.rule, Rule::kPrivateAddress) << v.resolved;
    EXPECT_EQ(d.internal, "");
  }
}

TEST(VetAddresses, RefusalNamesWhyTheCidrsDidNotAdmit) {
  auto ten = parseCidr("10.0.0.0/8"), any = parseCidr("0.0.0.0/0");
  ASSERT_TRUE(ten.ok() && any.ok());
  std::vector<IpAddress> outside = {address("192.168.1.1")}, meta = {address("169.254.169.254")};
  EXPECT_EQ(vetAddresses(named("example.com", 443), outside, std::vector{*ten}).decision.reason,
            "example.com resolved to 192.168.1.1, in private range 192.168.0.0/16, outside every --allow-internal CIDR");
  EXPECT_EQ(vetAddresses(named("example.com", 443), meta, std::vector{*any}).decision.reason,
            "example.com resolved to 169.254.169.254, in link-local range 169.254.0.0/16, a protected range that only "
            "an --allow-internal CIDR within 169.254.169.254/32 opens");
}

// Prints docs/egress-vectors.md from the tables above:
//   build-h/src/policy/egress_decide_test --gtest_also_run_disabled_tests
//     --gtest_filter='*PrintVectorsMarkdown' | sed -n '/^<!-- SPDX/,/^<!-- end/p' > docs/egress-vectors.md
TEST(Decide, DISABLED_PrintVectorsMarkdown) {
  auto cell = [](std::string_view s) {
    std::string out;
    for (char c : printable(s)) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return s.empty() ? std::string("(empty)") : "`` " + out + " ``";
  };
  std::ostringstream md;
  md << "<!-- SPDX-License-Identifier: Apache-2.0 -->\n# Egress policy test vectors\n\n"
     << "Generated from `src/policy/egress_vectors_test_data.h`, which is authoritative and which the unit tests\n"
     << "run (`egress_host_test`, `egress_grant_test`, `egress_decide_test`). Regenerate with the command in\n"
     << "`DISABLED_PrintVectorsMarkdown` (`src/policy/egress_decide_test.cc`). Rules: docs/egress-policy.md.\n"
     << "Control bytes are shown escaped (`\\n`, `\\x00`); `refused:` gives text the error message contains.\n\n"
     << "## Hosts\n\n| input | canonical form or refusal |\n|---|---|\n";
  for (const auto& v : vectors::kHosts) md << "| " << cell(v.input) << " | " << cell(v.expect) << " |\n";
  md << "\n## Ports\n\n| input | port or refusal |\n|---|---|\n";
  for (const auto& v : vectors::kPorts) md << "| " << cell(v.input) << " | " << cell(v.expect) << " |\n";
  md << "\n## Grants\n\n| grant | canonical grant or refusal |\n|---|---|\n";
  for (const auto& v : vectors::kGrants) md << "| " << cell(v.input) << " | " << cell(v.expect) << " |\n";
  md << "\n## Grant x request\n\n"
     << "`GET` is an HTTP/1.1 forward request, `GET/1.0` an HTTP/1.0 one. Host headers are separated by `|`, `-`\n"
     << "means none. *resolved* is the DNS answer handed to `vetAddresses`; *rule* is the `X-Corral-Denied` value\n"
     << "(or `allowed`), *dial* the socket address the proxy connects to. `CONNECT` stands for a SOCKS5 CONNECT too:\n"
     << "the proxy decides its `host:port` the same way. Several grants are separated by spaces.\n\n"
     << "| grants | method | target | Host | resolved | rule | dial |\n|---|---|---|---|---|---|---|\n";
  for (const auto& v : vectors::kDecisions)
    md << "| " << cell(v.grants) << " | " << v.method << " | " << cell(v.target) << " | " << cell(v.hosts) << " | "
       << cell(v.resolved) << " | " << v.expect << " | " << cell(v.dial) << " |\n";
  md << "\n## Internal CIDRs\n\n`--allow-internal` values (docs/egress-policy.md, \"Internal destinations by name\").\n\n"
     << "| CIDR | canonical CIDR or refusal |\n|---|---|\n";
  for (const auto& v : vectors::kCidrs) md << "| " << cell(v.input) << " | " << cell(v.expect) << " |\n";
  md << "\n## Internal CIDR x answer\n\n"
     << "The grant is `https://registry.corp.example`, the request `CONNECT registry.corp.example:443`; *internal* are\n"
     << "the `--allow-internal` CIDRs, *resolved* the DNS answer, *via* the CIDR named in the log and the trace.\n\n"
     << "| internal | resolved | rule | dial | via |\n|---|---|---|---|---|\n";
  for (const auto& v : vectors::kInternal)
    md << "| " << cell(v.internal) << " | " << cell(v.resolved) << " | " << v.expect << " | " << cell(v.dial) << " | "
       << cell(v.via) << " |\n";
  md << "\n<!-- end of generated vectors -->\n";
  std::cout << md.str();
}

}  // namespace
}  // namespace corral::policy::egress
