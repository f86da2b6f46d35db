// SPDX-License-Identifier: Apache-2.0
// Host canonicalisation: forbidden bytes, bracketed IPv6, IDNA, WHATWG IPv4, LDH names.
#include "policy/egress_host.h"

#include <idn2.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "policy/units.h"

namespace corral::policy::egress {
namespace {

Error bad(std::string_view what, std::string_view text, std::string_view why) {
  return Error(Errc::kInvalidArgument, std::string(what) + " '" + printable(text) + "': " + std::string(why));
}

// Bytes no host may hold, checked on the raw input before anything interprets it: each one
// either ends an authority in some parser ('/', '\', '?', '#', '@') or smuggles a second
// meaning (NUL truncation, CR/LF header injection, '%' encodings and IPv6 zone ids).
std::optional<std::string_view> forbiddenByte(std::string_view text) {
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u == 0) return "contains a NUL byte";
    if (c == '\r' || c == '\n') return "contains CR or LF";
    if (u < 0x20 || u == 0x7f) return "contains a control byte";
    switch (c) {
      case ' ': return "contains a space";
      case '%': return "contains '%' (percent-encoding and IPv6 zone ids are refused)";
      case '@': return "contains '@' (userinfo is refused)";
      case '/': case '\\': case '?': case '#': return "contains '/', '\\', '?' or '#'";
      default: break;
    }
  }
  return std::nullopt;
}

int digitValue(char c, int base) {
  int d = -1;
  if (c >= '0' && c <= '9') d = c - '0';
  else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
  else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
  return d < base ? d : -1;
}

bool isHexPrefixed(std::string_view s) { return s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'); }

// One WHATWG IPv4 part: 0x hex ("0x" alone is 0), leading-0 octal, else decimal.
std::optional<uint64_t> ipv4Number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int base = 10;
  if (isHexPrefixed(s)) {
    base = 16;
    s.remove_prefix(2);
  } else if (s.size() >= 2 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  uint64_t v = 0;
  for (char c : s) {
    int d = digitValue(c, base);
    if (d < 0) return std::nullopt;
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
    if (v > 0xffffffffu) return std::nullopt;  // checked every digit, so no wrap
  }
  return v;
}

// WHATWG "ends in a number": a last label of digits, or 0x and hex digits. Such a name is
// an IPv4 address or nothing, never a DNS name.
bool endsInNumber(std::string_view name) {
  std::string_view last = name.substr(name.rfind('.') + 1);
  if (last.empty()) return false;
  if (isHexPrefixed(last)) last.remove_prefix(2);
  else if (last.find_first_not_of("0123456789") != std::string_view::npos) return false;
  return last.find_first_not_of("0123456789abcdefABCDEF") == std::string_view::npos;
}

// 1 to 4 parts; every part but the last is one byte, the last fills the remaining bytes.
std::optional<IpAddress> parseIpv4(std::string_view name) {
  std::vector<uint64_t> parts;
  size_t start = 0;
  while (true) {
    size_t dot = name.find('.', start);
    auto n = ipv4Number(name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (!n || parts.size() == 4) return std::nullopt;
    parts.push_back(*n);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  uint64_t value = 0;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i] > 255) return std::nullopt;
    value |= parts[i] << (8 * (3 - i));
  }
  uint64_t last_bits = 8 * (5 - parts.size());
  if (parts.back() >= (uint64_t{1} << last_bits)) return std::nullopt;
  value |= parts.back();
  return ipv4(static_cast<uint8_t>(value >> 24), static_cast<uint8_t>(value >> 16),
              static_cast<uint8_t>(value >> 8), static_cast<uint8_t>(value));
}

// Strict dotted quad inside IPv6 (::ffff:1.2.3.4): four decimal parts, no leading zeros.
std::optional<std::array<uint8_t, 4>> dottedQuad(std::string_view s) {
  std::array<uint8_t, 4> out{};
  for (int i = 0; i < 4; ++i) {
    size_t dot = s.find('.');
    if ((i < 3) != (dot != std::string_view::npos)) return std::nullopt;
    std::string_view p = s.substr(0, dot);
    if (p.empty() || p.size() > 3 || (p.size() > 1 && p[0] == '0')) return std::nullopt;
    if (p.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
    int v = std::stoi(std::string(p));
    if (v > 255) return std::nullopt;
    out[i] = static_cast<uint8_t>(v);
    s = i < 3 ? s.substr(dot + 1) : std::string_view();
  }
  return out;
}

// RFC 4291 text: hex groups of 1-4 digits, at most one "::" standing for at least one zero
// group, an optional dotted quad as the last 32 bits.
std::optional<std::array<uint8_t, 16>> parseIpv6(std::string_view s) {
  std::array<uint16_t, 8> groups{};
  int n = 0, compress = -1;
  size_t i = 0;
  if (s.substr(0, 2) == "::") {
    compress = 0;
    i = 2;
  } else if (s.empty() || s[0] == ':') {
    return std::nullopt;
  }
  while (i < s.size()) {
    size_t colon = s.find(':', i);
    std::string_view piece = s.substr(i, colon == std::string_view::npos ? std::string_view::npos : colon - i);
    if (piece.find('.') != std::string_view::npos) {
      auto quad = dottedQuad(piece);
      if (!quad || colon != std::string_view::npos || n > 6) return std::nullopt;
      groups[n++] = static_cast<uint16_t>((*quad)[0] << 8 | (*quad)[1]);
      groups[n++] = static_cast<uint16_t>((*quad)[2] << 8 | (*quad)[3]);
      break;
    }
    if (piece.empty() || piece.size() > 4 || n == 8) return std::nullopt;
    uint16_t g = 0;
    for (char c : piece) {
      int d = digitValue(c, 16);
      if (d < 0) return std::nullopt;
      g = static_cast<uint16_t>(g << 4 | d);
    }
    groups[n++] = g;
    i += piece.size();
    if (i == s.size()) break;
    ++i;  // the ':'
    if (i == s.size()) return std::nullopt;  // a single trailing ':'
    if (s[i] == ':') {
      if (compress >= 0) return std::nullopt;
      compress = n;
      ++i;
    }
  }
  if (compress < 0 ? n != 8 : n == 8) return std::nullopt;
  std::array<uint16_t, 8> full{};
  int tail = compress < 0 ? 0 : n - compress;
  for (int k = 0; k < n - tail; ++k) full[k] = groups[k];
  for (int k = 0; k < tail; ++k) full[8 - tail + k] = groups[n - tail + k];
  std::array<uint8_t, 16> bytes{};
  for (size_t k = 0; k < 8; ++k) {
    bytes[2 * k] = static_cast<uint8_t>(full[k] >> 8);
    bytes[2 * k + 1] = static_cast<uint8_t>(full[k]);
  }
  return bytes;
}

Host ipHost(const IpAddress& ip) {
  return Host{ip.family == IpAddress::Family::kV4 ? HostKind::kIpv4 : HostKind::kIpv6, formatIp(ip), ip};
}

Result<Host> bracketed(std::string_view text) {
  if (text.size() < 2 || text.back() != ']') return bad("host", text, "an IPv6 literal needs a closing ']'");
  auto bytes = parseIpv6(text.substr(1, text.size() - 2));
  if (!bytes) return bad("host", text, "not a valid IPv6 address");
  // IPv4-mapped addresses become the IPv4 host: one destination, one spelling, so a grant
  // for 127.0.0.1 and a request for [::ffff:127.0.0.1] compare equal, and dialling it is
  // the same IPv4 connection either way.
  static constexpr std::array<uint8_t, 12> kMapped = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::equal(kMapped.begin(), kMapped.end(), bytes->begin()))
    return ipHost(ipv4((*bytes)[12], (*bytes)[13], (*bytes)[14], (*bytes)[15]));
  return ipHost(ipv6(*bytes));
}

// An A-label must decode and re-encode under IDNA: "xn--a" and friends are refused.
bool validALabel(const std::string& label) {
  char* out = nullptr;
  int rc = idn2_to_ascii_8z(label.c_str(), &out, IDN2_NONTRANSITIONAL);
  std::unique_ptr<char, decltype(&idn2_free)> owned(out, &idn2_free);
  return rc == IDN2_OK && out != nullptr && label == out;
}

// The ASCII half: shared by ASCII input and IDNA output, so canonical text re-parses to
// itself.
Result<Host> asciiHost(std::string name, std::string_view original) {
  for (char& c : name)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  if (!name.empty() && name.back() == '.') name.pop_back();
  if (name.empty()) return bad("host", original, "is empty");
  if (endsInNumber(name)) {
    auto ip = parseIpv4(name);
    if (!ip) return bad("host", original, "ends in a number but is not a valid IPv4 address");
    return ipHost(*ip);
  }
  if (name.size() > kMaxName) return bad("host", original, "is longer than 253 bytes");
  size_t start = 0;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    std::string label = name.substr(start, dot - start);
    if (label.empty()) return bad("host", original, "has an empty label");
    if (label.size() > kMaxLabel) return bad("host", original, "has a label longer than 63 bytes");
    // LDH only (RFC 1123): '_' is refused although browsers accept it; see egress-policy.md.
    if (label.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos)
      return bad("host", original, "has a character other than a letter, digit, '-' or '.'");
    if (label.front() == '-' || label.back() == '-') return bad("host", original, "has a label that starts or ends with '-'");
    if (label.rfind("xn--", 0) == 0 && !validALabel(label)) return bad("host", original, "has an invalid IDNA A-label");
    start = dot + 1;
  }
  return Host{HostKind::kName, std::move(name), {}};
}

}  // namespace

Result<Host> canonicalHost(std::string_view text) {
  if (text.empty()) return bad("host", text, "is empty");
  if (text.size() > kMaxHostInput) return bad("host", text, "is longer than 1024 bytes");
  if (auto why = forbiddenByte(text)) return bad("host", text, *why);
  if (text.front() == '[') return bracketed(text);
  if (text.find_first_of(":[]") != std::string_view::npos)
    return bad("host", text, "has ':' or a bracket outside an IPv6 literal (write IPv6 as [addr])");
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return asciiHost(std::string(text), text);
  // UTS 46 mapping happens here (case folding, fullwidth forms, ideographic full stops), so
  // the IPv4 and LDH checks run on what the name really is.
  char* out = nullptr;
  int rc = idn2_to_ascii_8z(std::string(text).c_str(), &out, IDN2_NONTRANSITIONAL);
  std::unique_ptr<char, decltype(&idn2_free)> owned(out, &idn2_free);
  if (rc != IDN2_OK || out == nullptr)
    return bad("host", text, std::string("is not a valid internationalised name (") + idn2_strerror_name(rc) + ")");
  return asciiHost(out, text);
}

std::string authorityText(const Host& host) {
  return host.kind == HostKind::kIpv6 ? "[" + host.text + "]" : host.text;
}

std::string formatIp(const IpAddress& ip) {
  const auto& b = ip.bytes;
  char buf[8];
  if (ip.family == IpAddress::Family::kV4) {
    std::string s;
    for (int i = 0; i < 4; ++i) s += (i ? "." : "") + std::to_string(b[i]);
    return s;
  }
  std::array<unsigned, 8> g{};
  for (size_t k = 0; k < 8; ++k) g[k] = static_cast<unsigned>(b[2 * k] << 8 | b[2 * k + 1]);
  // RFC 5952: compress the longest run of two or more zero groups, the first on a tie.
  int best = -1, best_len = 1;
  for (int k = 0; k < 8;) {
    int len = 0;
    while (k + len < 8 && g[k + len] == 0) ++len;
    if (len > best_len) best = k, best_len = len;
    k += len ? len : 1;
  }
  std::string s;
  for (int k = 0; k < 8; ++k) {
    if (k == best) {
      s += "::";
      k += best_len - 1;
      continue;
    }
    if (!s.empty() && s.back() != ':') s += ':';
    std::snprintf(buf, sizeof buf, "%x", g[k]);
    s += buf;
  }
  return s;
}

Result<uint16_t> parsePort(std::string_view text) {
  if (text.empty()) return bad("port", text, "is empty");
  if (text.size() > 5 || text.find_first_not_of("0123456789") != std::string_view::npos)
    return bad("port", text, "is not a decimal number from 1 to 65535");
  if (text[0] == '0') return bad("port", text, "has a leading zero or is 0 (ports are 1 to 65535)");
  unsigned v = static_cast<unsigned>(std::stoul(std::string(text)));
  if (v > 65535) return bad("port", text, "is larger than 65535");
  return static_cast<uint16_t>(v);
}

Result<AuthorityParts> splitAuthority(std::string_view text) {
  if (text.find('@') != std::string_view::npos) return bad("authority", text, "has userinfo ('@'), which is refused");
  size_t host_end = 0;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return bad("authority", text, "has an IPv6 literal without ']'");
    host_end = close + 1;
  } else {
    host_end = std::min(text.find(':'), text.size());
  }
  AuthorityParts parts{text.substr(0, host_end), std::nullopt};
  std::string_view rest = text.substr(host_end);
  if (!rest.empty()) {
    if (rest[0] != ':') return bad("authority", text, "has text after the IPv6 literal that is not ':port'");
    parts.port = rest.substr(1);
  }
  return parts;
}

Result<Authority> parseAuthority(std::string_view text) {
  auto parts = splitAuthority(text);
  if (!parts) return parts.error();
  auto host = canonicalHost(parts->host);
  if (!host) return host.error();
  Authority a{std::move(*host), std::nullopt};
  if (parts->port) {
    auto port = parsePort(*parts->port);
    if (!port) return port.error();
    a.port = *port;
  }
  return a;
}

}  // namespace corral::policy::egress
