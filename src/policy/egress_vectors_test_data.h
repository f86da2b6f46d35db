// SPDX-License-Identifier: Apache-2.0
// Published egress test vectors: the tables the unit tests run, authoritative over
// docs/egress-vectors.md (which is printed from them, see that file).
#pragma once

#include <string_view>

namespace corral::policy::egress::vectors {

using namespace std::string_view_literals;

// expect: "name:<canonical>", "ipv4:<canonical>", "ipv6:<canonical>", or "refused:<text the
// error message contains>".
struct HostVector {
  std::string_view input;
  std::string_view expect;
};

inline constexpr HostVector kHosts[] = {
    {"example.com", "name:example.com"},
    {"EXAMPLE.COM", "name:example.com"},
    {"Api.Example.Com.", "name:api.example.com"},
    {"example.com..", "refused:empty label"},
    {".", "refused:is empty"},
    {"", "refused:is empty"},
    {"a..b", "refused:empty label"},
    {"bücher.example", "name:xn--bcher-kva.example"},
    {"BÜCHER.Example", "name:xn--bcher-kva.example"},
    {"XN--BCHER-KVA.example", "name:xn--bcher-kva.example"},
    {"ｅｘａｍｐｌｅ．ｃｏｍ", "name:example.com"},
    {"bücher。example", "name:xn--bcher-kva.example"},
    {"faß.de", "name:xn--fa-hia.de"},
    {"аpple.com", "name:xn--pple-43d.com"},  // Cyrillic a: a different name, never apple.com
    {"⒈.com", "refused:not a valid internationalised name"},
    {"\xff.com"sv, "refused:not a valid internationalised name"},
    {"xn--a.com", "refused:invalid IDNA A-label"},
    {"xn--.com", "refused:starts or ends with '-'"},
    {"℀.com", "refused:other than a letter, digit"},  // UTS 46 maps it to "a/c"
    {"a_b.example", "refused:other than a letter, digit"},
    {"*.example.com", "refused:other than a letter, digit"},
    {"-a.example", "refused:starts or ends with '-'"},
    {"a-.example", "refused:starts or ends with '-'"},
    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", "name:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com"},
    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", "refused:label longer than 63 bytes"},
    {"r3---sn-abc.googlevideo.com", "name:r3---sn-abc.googlevideo.com"},
    {"1.2.3.4a", "name:1.2.3.4a"},  // last label not numeric: a name, as in browsers
    {"a b.com", "refused:space"},
    {"a\0b.com"sv, "refused:NUL"},
    {"example.com\r\nX-Evil: 1", "refused:CR or LF"},
    {"a\tb.com", "refused:control byte"},
    {"a\x7f.com", "refused:control byte"},
    {"exa%6dple.com", "refused:'%'"},
    {"user@example.com", "refused:'@'"},
    {"example.com/path", "refused:'/'"},
    {"example.com\\", "refused:'/'"},
    {"example.com?x", "refused:'/'"},
    {"example.com#x", "refused:'/'"},
    {"example.com:80", "refused:':'"},
    {"127.0.0.1", "ipv4:127.0.0.1"},
    {"127.1", "ipv4:127.0.0.1"},
    {"127.0.1", "ipv4:127.0.0.1"},
    {"0x7f.0.0.1", "ipv4:127.0.0.1"},
    {"0X7F.0.0.1", "ipv4:127.0.0.1"},
    {"2130706433", "ipv4:127.0.0.1"},
    {"0177.0.0.1", "ipv4:127.0.0.1"},
    {"0x7f000001", "ipv4:127.0.0.1"},
    {"017700000001", "ipv4:127.0.0.1"},
    {"127.0.0.1.", "ipv4:127.0.0.1"},
    {"１２７．０．０．１", "ipv4:127.0.0.1"},
    {"0", "ipv4:0.0.0.0"},
    {"0x", "ipv4:0.0.0.0"},
    {"1.65535", "ipv4:1.0.255.255"},
    {"0xa9fea9fe", "ipv4:169.254.169.254"},
    {"4294967295", "ipv4:255.255.255.255"},
    {"4294967296", "refused:not a valid IPv4"},
    {"256.0.0.1", "refused:not a valid IPv4"},
    {"1.2.3.256", "refused:not a valid IPv4"},
    {"1.2.3.4.5", "refused:not a valid IPv4"},
    {"08.0.0.1", "refused:not a valid IPv4"},
    {"0x1g.0.0.1", "refused:not a valid IPv4"},
    {"1..1", "refused:not a valid IPv4"},
    {"example.123", "refused:not a valid IPv4"},
    {"example.0x1f", "refused:not a valid IPv4"},
    {"99999999999999999999999", "refused:not a valid IPv4"},
    {"[::1]", "ipv6:::1"},
    {"[0:0:0:0:0:0:0:1]", "ipv6:::1"},
    {"[::]", "ipv6:::"},
    {"[::ffff:127.0.0.1]", "ipv4:127.0.0.1"},
    {"[::ffff:7f00:1]", "ipv4:127.0.0.1"},
    {"[::FFFF:7F00:1]", "ipv4:127.0.0.1"},
    {"[::ffff:169.254.169.254]", "ipv4:169.254.169.254"},
    {"[::127.0.0.1]", "ipv6:::7f00:1"},
    {"[64:ff9b::7f00:1]", "ipv6:64:ff9b::7f00:1"},
    {"[2001:DB8::1]", "ipv6:2001:db8::1"},
    {"[2001:0db8:0000:0000:0000:0000:0000:0001]", "ipv6:2001:db8::1"},
    {"[1:0:0:1:0:0:0:1]", "ipv6:1:0:0:1::1"},
    {"[1:0:0:1:1:0:0:1]", "ipv6:1::1:1:0:0:1"},
    {"[1:0:1:1:1:1:1:1]", "ipv6:1:0:1:1:1:1:1:1"},
    {"[1:2:3:4:5:6:7::]", "ipv6:1:2:3:4:5:6:7:0"},
    {"[fe80::1%eth0]", "refused:'%'"},
    {"[fe80::1%25eth0]", "refused:'%'"},
    {"::1", "refused:':'"},
    {"[::1", "refused:closing ']'"},
    {"[]", "refused:not a valid IPv6"},
    {"[1::2::3]", "refused:not a valid IPv6"},
    {"[12345::]", "refused:not a valid IPv6"},
    {"[1:2:3:4:5:6:7:8:9]", "refused:not a valid IPv6"},
    {"[1:2:3:4:5:6:7:8::]", "refused:not a valid IPv6"},
    {"[::ffff:127.1]", "refused:not a valid IPv6"},
    {"[::ffff:127.0.0.01]", "refused:not a valid IPv6"},
    {"[example.com]", "refused:not a valid IPv6"},
};

// expect: the port, or "refused:<text>".
struct PortVector {
  std::string_view input;
  std::string_view expect;
};

inline constexpr PortVector kPorts[] = {
    {"80", "80"},       {"1", "1"},          {"65535", "65535"},  {"0", "refused:leading zero or is 0"},
    {"080", "refused:leading zero"},         {"65536", "refused:larger than 65535"},
    {"99999", "refused:larger than 65535"},  {"123456", "refused:not a decimal number"},
    {"80a", "refused:not a decimal number"}, {"+80", "refused:not a decimal number"},
    {" 80", "refused:not a decimal number"}, {"-1", "refused:not a decimal number"},
    {"", "refused:is empty"},
};

// expect: the canonical grant text, or "refused:<text>".
struct GrantVector {
  std::string_view input;
  std::string_view expect;
};

inline constexpr GrantVector kGrants[] = {
    {"https://api.example.com", "https://api.example.com:443"},
    {"HTTPS://API.Example.com./", "https://api.example.com:443"},
    {"http://example.com", "http://example.com:80"},
    {"https://api.example.com:8443", "https://api.example.com:8443"},
    {"https://*.example.com", "https://*.example.com:443"},
    {"https://*.bücher.example", "https://*.xn--bcher-kva.example:443"},
    {"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
    {"http://127.1:8080", "http://127.0.0.1:8080"},
    {"http://[::1]:8080", "http://[::1]:8080"},
    {"http://[::ffff:127.0.0.1]:8080", "http://127.0.0.1:8080"},
    {"http://169.254.169.254", "http://169.254.169.254:80"},
    {"ftp://example.com", "refused:scheme must be http, https or tcp"},
    // Any TCP protocol (issue #24): the port is always named, wildcards as for https.
    {"tcp://git.example.com:22", "tcp://git.example.com:22"},
    {"TCP://DB.Example.com.:5432/", "tcp://db.example.com:5432"},
    {"tcp://*.example.com:6379", "tcp://*.example.com:6379"},
    {"tcp://127.0.0.1:2222", "tcp://127.0.0.1:2222"},
    {"tcp://[::1]:5432", "tcp://[::1]:5432"},
    {"tcp://git.example.com", "refused:a tcp grant needs a port"},
    {"tcp://*.example.com", "refused:a tcp grant needs a port"},
    {"tcp://git.example.com:0", "refused:is 0"},
    {"tcp://u@git.example.com:22", "refused:userinfo"},
    {"tcp://git.example.com:22/x", "refused:not a path"},
    {"tcp://0.0.0.0:22", "refused:unspecified address"},
    {"example.com", "refused:expected scheme://host"},
    {"https://example.com/path", "refused:not a path"},
    {"https://example.com//", "refused:not a path"},
    {"https://example.com?q", "refused:no query or fragment"},
    {"https://example.com#f", "refused:no query or fragment"},
    {"https://user@example.com", "refused:userinfo"},
    {"https://example.com:0", "refused:is 0"},
    {"https://example.com:65536", "refused:larger than 65535"},
    {"https://example.com:", "refused:port '': is empty"},
    {"https://", "refused:is empty"},
    {"https://*.com", "refused:two or more labels"},
    {"https://*.127.0.0.1", "refused:cannot cover an IP address"},
    {"https://*.[::1]", "refused:cannot cover an IP address"},
    {"https://a.*.example.com", "refused:leading '*.'"},
    {"https://*example.com", "refused:leading '*.'"},
    {"https://*", "refused:leading '*.'"},
    {"https://*.*.example.com", "refused:leading '*.'"},
    {"http://0.0.0.0", "refused:unspecified address"},
    {"http://255.255.255.255", "refused:broadcast address"},
    {"http://[ff02::1]", "refused:multicast address"},
    {"http://[fe80::1%eth0]", "refused:'%'"},
};

// One request against a grant list. grants: space-separated; method: "GET" (HTTP/1.1),
// "GET/1.0" or "CONNECT"; hosts: Host header values separated by '|', "-" for none;
// resolved: space-separated addresses the DNS answer held; expect: the rule id after the
// request and, when allowed, after vetAddresses; dial: "addr:port" when allowed.
struct DecideVector {
  std::string_view grants;
  std::string_view method;
  std::string_view target;
  std::string_view hosts;
  std::string_view resolved;
  std::string_view expect;
  std::string_view dial;
};

inline constexpr DecideVector kDecisions[] = {
    // Default deny.
    {"", "GET", "http://example.com/", "example.com", "93.184.216.34", "no-grant", ""},
    {"", "CONNECT", "example.com:443", "-", "93.184.216.34", "no-grant", ""},
    // Scheme, host and port all have to match.
    {"https://api.example.com", "CONNECT", "api.example.com:443", "-", "93.184.216.34", "allowed", "93.184.216.34:443"},
    {"https://api.example.com", "CONNECT", "API.EXAMPLE.COM.:443", "-", "93.184.216.34", "allowed", "93.184.216.34:443"},
    {"https://api.example.com", "CONNECT", "api.example.com:8443", "-", "93.184.216.34", "port-mismatch", ""},
    {"https://api.example.com", "GET", "http://api.example.com/", "api.example.com", "93.184.216.34", "scheme-mismatch", ""},
    {"https://api.example.com", "CONNECT", "example.com:443", "-", "93.184.216.34", "no-grant", ""},
    {"http://example.com", "CONNECT", "example.com:80", "-", "93.184.216.34", "scheme-mismatch", ""},
    {"http://example.com", "GET", "http://example.com/x?y=1", "example.com", "93.184.216.34", "allowed", "93.184.216.34:80"},
    {"http://example.com", "GET", "http://example.com:8080/", "example.com:8080", "93.184.216.34", "port-mismatch", ""},
    // Tunnels (CONNECT and SOCKS5 alike) open tcp grants too; a forward request never does.
    {"tcp://git.example.com:22", "CONNECT", "git.example.com:22", "-", "93.184.216.34", "allowed", "93.184.216.34:22"},
    {"tcp://git.example.com:22", "CONNECT", "GIT.example.com.:22", "-", "93.184.216.34", "allowed", "93.184.216.34:22"},
    {"tcp://git.example.com:22", "CONNECT", "git.example.com:2222", "-", "93.184.216.34", "port-mismatch", ""},
    {"tcp://git.example.com:22", "CONNECT", "git.example.com:443", "-", "93.184.216.34", "port-mismatch", ""},
    {"tcp://git.example.com:22", "CONNECT", "example.com:22", "-", "93.184.216.34", "no-grant", ""},
    {"tcp://git.example.com:80", "GET", "http://git.example.com/", "git.example.com", "93.184.216.34", "scheme-mismatch", ""},
    {"tcp://*.example.com:5432", "CONNECT", "db.example.com:5432", "-", "93.184.216.34", "allowed", "93.184.216.34:5432"},
    {"tcp://*.example.com:5432", "CONNECT", "example.com:5432", "-", "93.184.216.34", "no-grant", ""},
    {"tcp://db.example.com:5432", "CONNECT", "db.example.com:5432", "-", "127.0.0.1", "private-address", ""},
    {"tcp://db.example.com:5432", "CONNECT", "db.example.com:5432", "-", "93.184.216.34 10.0.0.1", "private-address", ""},
    {"tcp://db.example.com:5432", "CONNECT", "db.example.com:5432", "-", "169.254.169.254", "private-address", ""},
    {"tcp://127.0.0.1:5432", "CONNECT", "127.0.0.1:5432", "-", "", "allowed", "127.0.0.1:5432"},
    {"tcp://127.0.0.1:5432", "CONNECT", "127.1:5432", "-", "", "allowed", "127.0.0.1:5432"},
    {"tcp://127.0.0.1:5432", "CONNECT", "localhost:5432", "-", "127.0.0.1", "no-grant", ""},
    {"https://h.example.com tcp://h.example.com:22", "CONNECT", "h.example.com:22", "-", "93.184.216.34", "allowed", "93.184.216.34:22"},
    {"https://h.example.com tcp://h.example.com:22", "CONNECT", "h.example.com:443", "-", "93.184.216.34", "allowed", "93.184.216.34:443"},
    {"https://h.example.com tcp://h.example.com:22", "CONNECT", "h.example.com:8443", "-", "93.184.216.34", "port-mismatch", ""},
    // Wildcards cover subdomains only.
    {"https://*.example.com", "CONNECT", "a.example.com:443", "-", "93.184.216.34", "allowed", "93.184.216.34:443"},
    {"https://*.example.com", "CONNECT", "a.b.example.com:443", "-", "93.184.216.34", "allowed", "93.184.216.34:443"},
    {"https://*.example.com", "CONNECT", "example.com:443", "-", "93.184.216.34", "no-grant", ""},
    {"https://*.example.com", "CONNECT", "evilexample.com:443", "-", "93.184.216.34", "no-grant", ""},
    {"https://*.example.com", "CONNECT", "a.example.com.evil.com:443", "-", "93.184.216.34", "no-grant", ""},
    {"https://*.example.com", "CONNECT", "a.example.com:8443", "-", "93.184.216.34", "port-mismatch", ""},
    // IDNA: grant and request meet in A-label form; a homoglyph is another name.
    {"https://bücher.example", "CONNECT", "xn--bcher-kva.example:443", "-", "93.184.216.34", "allowed", "93.184.216.34:443"},
    {"https://bücher.example", "CONNECT", "BÜCHER.example:443", "-", "93.184.216.34", "allowed", "93.184.216.34:443"},
    {"https://apple.com", "CONNECT", "аpple.com:443", "-", "93.184.216.34", "no-grant", ""},
    // Rebinding and internal ranges: a granted name never reaches them.
    {"https://api.example.com", "CONNECT", "api.example.com:443", "-", "127.0.0.1", "private-address", ""},
    {"https://api.example.com", "CONNECT", "api.example.com:443", "-", "93.184.216.34 10.0.0.1", "private-address", ""},
    {"https://api.example.com", "CONNECT", "api.example.com:443", "-", "::ffff:127.0.0.1", "private-address", ""},
    {"https://api.example.com", "CONNECT", "api.example.com:443", "-", "169.254.169.254", "private-address", ""},
    {"https://api.example.com", "CONNECT", "api.example.com:443", "-", "100.64.0.1", "private-address", ""},
    {"https://api.example.com", "CONNECT", "api.example.com:443", "-", "192.168.1.1", "private-address", ""},
    {"https://api.example.com", "CONNECT", "api.example.com:443", "-", "fc00::1", "private-address", ""},
    {"https://api.example.com", "CONNECT", "api.example.com:443", "-", "fe80::1", "private-address", ""},
    {"https://api.example.com", "CONNECT", "api.example.com:443", "-", "ff02::1", "private-address", ""},
    {"https://api.example.com", "CONNECT", "api.example.com:443", "-", "0.0.0.0", "private-address", ""},
    {"https://api.example.com", "CONNECT", "api.example.com:443", "-", "255.255.255.255", "private-address", ""},
    {"https://api.example.com", "CONNECT", "api.example.com:443", "-", "64:ff9b::a00:1", "private-address", ""},
    {"https://api.example.com", "CONNECT", "api.example.com:443", "-", "", "no-address", ""},
    {"https://api.example.com", "CONNECT", "api.example.com:443", "-", "2606:4700::1111", "allowed", "[2606:4700::1111]:443"},
    // A literal grant opens exactly that address, in any range, without DNS.
    {"http://127.0.0.1:8080", "GET", "http://127.0.0.1:8080/x", "127.0.0.1:8080", "", "allowed", "127.0.0.1:8080"},
    {"http://127.0.0.1:8080", "GET", "http://127.1:8080/", "127.0.0.1:8080", "", "allowed", "127.0.0.1:8080"},
    {"http://127.0.0.1:8080", "GET", "http://0x7f.0.0.1:8080/", "2130706433:8080", "", "allowed", "127.0.0.1:8080"},
    {"http://127.0.0.1:8080", "GET", "http://[::ffff:127.0.0.1]:8080/", "[::ffff:7f00:1]:8080", "", "allowed", "127.0.0.1:8080"},
    {"http://127.0.0.1:8080", "GET", "http://localhost:8080/", "localhost:8080", "127.0.0.1", "no-grant", ""},
    {"http://127.0.0.1:8080", "GET", "http://127.0.0.1/", "127.0.0.1", "", "port-mismatch", ""},
    {"http://127.0.0.1:8080", "CONNECT", "127.0.0.1:8080", "-", "", "scheme-mismatch", ""},
    {"http://127.0.0.1:8080", "GET", "http://127.0.0.2:8080/", "127.0.0.2:8080", "", "no-grant", ""},
    {"https://[::1]", "CONNECT", "[::1]:443", "-", "", "allowed", "[::1]:443"},
    {"https://[::1]", "CONNECT", "[0:0::1]:443", "-", "", "allowed", "[::1]:443"},
    {"http://169.254.169.254", "GET", "http://169.254.169.254/latest/meta-data/", "169.254.169.254", "", "allowed", "169.254.169.254:80"},
    {"http://example.com", "GET", "http://169.254.169.254/latest/meta-data/", "169.254.169.254", "", "no-grant", ""},
    // The absolute-form target decides; the Host header must agree.
    {"http://example.com", "GET", "http://example.com/", "evil.com", "93.184.216.34", "host-header-mismatch", ""},
    {"http://example.com", "GET", "http://example.com/", "example.com:8080", "93.184.216.34", "host-header-mismatch", ""},
    {"http://example.com", "GET", "http://example.com/", "example.com, evil.com", "93.184.216.34", "host-header-mismatch", ""},
    {"http://example.com", "GET", "http://example.com/", "", "93.184.216.34", "host-header-mismatch", ""},
    {"http://example.com", "GET", "http://example.com/", "user@example.com", "93.184.216.34", "host-header-mismatch", ""},
    {"http://example.com", "GET", "http://example.com/", "EXAMPLE.com.", "93.184.216.34", "allowed", "93.184.216.34:80"},
    {"http://example.com", "GET", "http://example.com/", "example.com:80", "93.184.216.34", "allowed", "93.184.216.34:80"},
    {"http://example.com", "GET", "http://example.com/", "-", "93.184.216.34", "host-header-missing", ""},
    {"http://example.com", "GET/1.0", "http://example.com/", "-", "93.184.216.34", "allowed", "93.184.216.34:80"},
    {"http://example.com", "GET/1.0", "http://example.com/", "evil.com", "93.184.216.34", "host-header-mismatch", ""},
    {"http://example.com", "GET", "http://example.com/", "example.com|example.com", "93.184.216.34", "host-header-duplicate", ""},
    {"http://example.com", "GET", "http://example.com/", "example.com|evil.com", "93.184.216.34", "host-header-duplicate", ""},
    // Malformed forward targets.
    {"http://example.com", "GET", "/path", "example.com", "", "bad-target", ""},
    {"https://example.com", "GET", "https://example.com/", "example.com", "", "bad-target", ""},
    {"http://example.com", "GET", "ftp://example.com/", "example.com", "", "bad-target", ""},
    {"http://example.com", "GET", "http://user@example.com/", "example.com", "", "bad-target", ""},
    {"http://example.com", "GET", "http://evil.com\\@example.com/", "example.com", "", "bad-target", ""},
    {"http://example.com", "GET", "http://example.com/#frag", "example.com", "", "bad-target", ""},
    {"http://example.com", "GET", "http://exa mple.com/", "example.com", "", "bad-target", ""},
    {"http://example.com", "GET", "http://example.com\r\n/", "example.com", "", "bad-target", ""},
    {"http://example.com", "GET", "http:///path", "example.com", "", "bad-host", ""},
    {"http://example.com", "GET", "http://ex%61mple.com/", "example.com", "", "bad-host", ""},
    {"http://example.com", "GET", "http://example.com:0/", "example.com", "", "bad-port", ""},
    {"http://example.com", "GET", "http://example.com:80a/", "example.com", "", "bad-port", ""},
    {"http://example.com", "GET", "http://example.com:+80/", "example.com", "", "bad-port", ""},
    {"http://example.com", "GET", "http://example.com:65536/", "example.com", "", "bad-port", ""},
    {"http://example.com", "GET", "HTTP://EXAMPLE.COM", "example.com", "93.184.216.34", "allowed", "93.184.216.34:80"},
    // Malformed CONNECT targets.
    {"https://api.example.com", "CONNECT", "api.example.com", "-", "", "bad-target", ""},
    {"https://api.example.com", "CONNECT", "https://api.example.com:443", "-", "", "bad-target", ""},
    {"https://api.example.com", "CONNECT", "user@api.example.com:443", "-", "", "bad-target", ""},
    {"https://api.example.com", "CONNECT", "api.example.com:443/x", "-", "", "bad-port", ""},
    {"https://api.example.com", "CONNECT", "api.example.com:", "-", "", "bad-port", ""},
    {"https://api.example.com", "CONNECT", "", "-", "", "bad-host", ""},
    {"https://api.example.com", "CONNECT", "api.example.com\0:443"sv, "-", "", "bad-target", ""},
    {"https://api.example.com", "CONNECT", "[::1:443", "-", "", "bad-target", ""},
};

// --allow-internal CIDRs. expect: "cidr:<canonical>" or "refused:<text the error contains>".
struct CidrVector {
  std::string_view input;
  std::string_view expect;
};

inline constexpr CidrVector kCidrs[] = {
    {"10.0.0.0/8", "cidr:10.0.0.0/8"},
    {"10.20.0.0/16", "cidr:10.20.0.0/16"},
    {"169.254.169.254/32", "cidr:169.254.169.254/32"},
    {"0.0.0.0/0", "cidr:0.0.0.0/0"},
    {"FD00:EC2::254/128", "cidr:fd00:ec2::254/128"},
    {"fd00::/8", "cidr:fd00::/8"},
    {"10.0.0.1/8", "refused:host bits set (the network is 10.0.0.0/8)"},
    {"10.0.0.0", "refused:needs a prefix length"},
    {"10.0.0.0/", "refused:no decimal number"},
    {"10.0.0.0/08", "refused:no decimal number"},
    {"10.0.0.0/+8", "refused:no decimal number"},
    {"10.0.0.0/33", "refused:larger than 32"},
    {"fd00::/129", "refused:larger than 128"},
    {"10/8", "refused:dotted quad"},
    {"0x0a.0.0.0/8", "refused:dotted quad"},
    {"::ffff:10.0.0.0/104", "refused:IPv4-mapped"},
    {"[fd00::]/8", "refused:no IPv4 or IPv6 address"},
    {"corp.example/8", "refused:no IPv4 or IPv6 address"},
    {"/8", "refused:has no address"},
    {"10.0.0.0/8\n", "refused:no decimal number"},
};

// A granted name (https://registry.corp.example, CONNECT registry.corp.example:443) whose DNS
// answer is `resolved`, with `internal` (space-separated) as the --allow-internal CIDRs.
// expect: the rule id; dial: "addr:port" when allowed; via: the CIDR that admitted it.
struct InternalVector {
  std::string_view internal;
  std::string_view resolved;
  std::string_view expect;
  std::string_view dial;
  std::string_view via;
};

inline constexpr InternalVector kInternal[] = {
    // The matching CIDR admits; without it, or with a neighbouring one, the name is refused.
    {"10.20.0.0/16", "10.20.1.5", "allowed", "10.20.1.5:443", "10.20.0.0/16"},
    {"", "10.20.1.5", "private-address", "", ""},
    {"10.21.0.0/16", "10.20.1.5", "private-address", "", ""},
    {"10.20.1.0/25", "10.20.1.128", "private-address", "", ""},
    {"10.21.0.0/16 10.20.0.0/16", "10.20.1.5", "allowed", "10.20.1.5:443", "10.20.0.0/16"},
    {"192.168.0.0/16", "192.168.7.7", "allowed", "192.168.7.7:443", "192.168.0.0/16"},
    {"100.64.0.0/10", "100.64.3.4", "allowed", "100.64.3.4:443", "100.64.0.0/10"},
    {"fd00::/8", "fd12::7", "allowed", "[fd12::7]:443", "fd00::/8"},
    {"fd00::/8", "fc00::7", "private-address", "", ""},
    // A public answer needs no CIDR and names none.
    {"10.0.0.0/8", "93.184.216.34", "allowed", "93.184.216.34:443", ""},
    {"10.0.0.0/8", "93.184.216.34 10.1.1.1", "allowed", "93.184.216.34:443", ""},
    // Mixed answers: one address outside every CIDR refuses the whole answer.
    {"10.20.0.0/16", "10.20.1.5 10.30.1.5", "private-address", "", ""},
    {"10.20.0.0/16", "10.20.1.5 127.0.0.1", "private-address", "", ""},
    {"10.20.0.0/16", "10.20.1.5 169.254.169.254", "private-address", "", ""},
    {"10.0.0.0/8", "10.1.1.1 93.184.216.34", "allowed", "10.1.1.1:443", "10.0.0.0/8"},
    // Protected ranges: only a CIDR within the narrowest one opens them.
    {"0.0.0.0/0", "127.0.0.1", "private-address", "", ""},
    {"0.0.0.0/0", "0.0.0.0", "private-address", "", ""},
    {"0.0.0.0/0", "169.254.10.1", "private-address", "", ""},
    {"0.0.0.0/0", "10.9.9.9", "allowed", "10.9.9.9:443", "0.0.0.0/0"},
    {"127.0.0.0/8", "127.0.0.1", "allowed", "127.0.0.1:443", "127.0.0.0/8"},
    {"127.0.0.1/32", "127.0.0.1", "allowed", "127.0.0.1:443", "127.0.0.1/32"},
    {"126.0.0.0/7", "127.0.0.1", "private-address", "", ""},
    {"169.254.0.0/16", "169.254.10.1", "allowed", "169.254.10.1:443", "169.254.0.0/16"},
    {"169.254.0.0/16", "169.254.169.254", "private-address", "", ""},
    {"169.254.169.0/24", "169.254.169.254", "private-address", "", ""},
    {"169.254.169.254/32", "169.254.169.254", "allowed", "169.254.169.254:443", "169.254.169.254/32"},
    {"169.254.0.0/16", "169.254.170.2", "private-address", "", ""},
    {"100.64.0.0/10", "100.100.100.200", "private-address", "", ""},
    {"fd00::/8", "fd00:ec2::254", "private-address", "", ""},
    {"fd00:ec2::254/128", "fd00:ec2::254", "allowed", "[fd00:ec2::254]:443", "fd00:ec2::254/128"},
    {"fd00::/8", "fd20:ce::254", "private-address", "", ""},
    {"::/0", "::1", "private-address", "", ""},
    {"::1/128", "::1", "allowed", "[::1]:443", "::1/128"},
    {"::/0", "fe80::1", "private-address", "", ""},
    // Never a TCP destination, or not this one: multicast, broadcast, IPv4 inside IPv6.
    {"224.0.0.0/4", "224.0.0.1", "private-address", "", ""},
    {"255.255.255.255/32", "255.255.255.255", "private-address", "", ""},
    {"::/0", "::ffff:10.1.1.1", "private-address", "", ""},
    {"10.0.0.0/8", "::ffff:10.1.1.1", "private-address", "", ""},
    {"::/0", "64:ff9b::a01:101", "private-address", "", ""},
    // An empty answer stays an empty answer.
    {"10.0.0.0/8", "", "no-address", "", ""},
};

}  // namespace corral::policy::egress::vectors
