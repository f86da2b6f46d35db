// SPDX-License-Identifier: Apache-2.0
// Credential lease specs: grammar and field rules (docs/credential-leases.md).
#include "net/lease_spec.h"

#include <array>
#include <cctype>
#include <optional>
#include <vector>

#include "policy/units.h"

namespace corral::net {
namespace {

// Hostile or mistyped input as it may appear in a one-line message.
std::string quoted(std::string_view text) { return "'" + policy::printable(text) + "'"; }

bool isTchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

// Headers the proxy owns: framing, routing and hop-by-hop fields, and the two it sets or
// drops itself (Accept-Encoding: identity, so responses can be scanned for the secret;
// Expect, which it answers). Injecting a secret into one of them would either break the
// request, be dropped on the way, or go out beside the proxy's own value.
constexpr std::array<std::string_view, 13> kReservedHeaders = {
    "host", "content-length", "transfer-encoding", "connection", "keep-alive", "te", "trailer",
    "upgrade", "proxy-connection", "proxy-authorization", "proxy-authenticate", "accept-encoding", "expect"};

Error invalid(std::string context) { return Error(Errc::kInvalidArgument, std::move(context)); }

}  // namespace

Result<void> checkLeaseName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= kMaxLeaseName;
  for (char c : name)
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
  if (!ok) return invalid("name " + quoted(name) + " must be 1-64 of a-z, 0-9, '_', '-'");
  return {};
}

Result<void> checkEnvName(std::string_view env) {
  bool ok = !env.empty() && env.size() <= 128 && !(env[0] >= '0' && env[0] <= '9');
  for (char c : env) ok = ok && ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
  if (!ok) return invalid("environment variable " + quoted(env) + " must match [A-Z_][A-Z0-9_]* (at most 128)");
  return {};
}

Result<policy::egress::Grant> parseLeaseUrl(std::string_view url) {
  // The refused text is never echoed: an operator's URL may carry a token in its userinfo,
  // path or query (https://user:TOKEN@host, ?key=...), and the error goes to logs.
  auto grant = policy::egress::parseGrantReasonOnly(url);
  if (!grant) return invalid("url: " + grant.error().message() + " (URL not shown)");
  if (grant->wildcard)
    return invalid("url " + quoted(url) + ": a credential goes to one host, '*.' is refused");
  // A lease is an HTTP header: a tcp destination has none to carry it.
  if (grant->scheme == policy::egress::Scheme::kTcp)
    return invalid("url " + quoted(url) + ": a credential is an HTTP header; tcp:// is refused");
  return grant;
}

Result<void> checkHeaderName(std::string_view header) {
  bool ok = !header.empty() && header.size() <= kMaxHeaderName;
  for (char c : header) ok = ok && isTchar(c);
  // Not echoed: a refused name is often a whole "Authorization: Bearer <token>" pasted in.
  if (!ok) return invalid("header must be 1-64 HTTP token characters (the name alone, e.g. Authorization; not shown)");
  for (std::string_view reserved : kReservedHeaders)
    if (equalsIgnoreCase(header, reserved))
      return invalid("header " + quoted(header) + " is owned by the proxy (framing, hop-by-hop or set by the proxy) and cannot carry a credential");
  return {};
}

Result<void> checkFormat(std::string_view format) {
  if (format.size() > kMaxFormat) return invalid("format is longer than 256 bytes");
  for (char c : format) {
    auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f)
      return invalid("format " + quoted(format) + " contains a control byte (CR/LF would split the header)");
  }
  size_t first = format.find("{}");
  if (first == std::string_view::npos || format.find("{}", first + 2) != std::string_view::npos)
    return invalid("format " + quoted(format) + " must contain exactly one {}");
  return {};
}

namespace {

Result<LeaseSpec> buildSpec(std::string_view name, std::string_view env, std::string_view url,
                            std::string_view header, std::string_view format) {
  RETURN_IF_ERROR(checkLeaseName(name));
  LeaseSpec spec;
  spec.name = std::string(name);
  RETURN_IF_ERROR(checkEnvName(env));
  spec.env = std::string(env);
  ASSIGN_OR_RETURN(spec.grant, parseLeaseUrl(url));
  RETURN_IF_ERROR(checkHeaderName(header));
  spec.header = std::string(header);
  RETURN_IF_ERROR(checkFormat(format));
  spec.format = std::string(format);
  return spec;
}

struct Options {
  std::optional<std::string_view> header, format, max_requests, max_bytes, rate, burst;
};

Result<void> parseOptions(std::string_view rest, Options& o) {
  while (true) {
    size_t semi = rest.find(';');
    std::string_view item = rest.substr(0, semi);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return invalid("option " + quoted(item) + " must be key=value");
    std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    std::optional<std::string_view>* slot = key == "header"         ? &o.header
                                            : key == "format"       ? &o.format
                                            : key == "max_requests" ? &o.max_requests
                                            : key == "max_bytes"    ? &o.max_bytes
                                            : key == "rate"         ? &o.rate
                                            : key == "burst"        ? &o.burst
                                                                    : nullptr;
    if (slot == nullptr)
      return invalid("unknown option " + quoted(key) +
                     " (known: header, format, max_requests, max_bytes, rate, burst)");
    if (slot->has_value()) return invalid("option " + std::string(key) + " given twice");
    *slot = value;
    if (semi == std::string_view::npos) return {};
    rest = rest.substr(semi + 1);
  }
}

Result<void> applyLimits(const Options& o, LeaseLimits& l) {
  if (o.max_requests) {
    auto n = policy::parseCount(*o.max_requests, 1'000'000'000);
    if (!n) return n.error().wrap("max_requests");
    l.max_requests = *n;
  }
  if (o.max_bytes) {
    auto n = policy::parseSize(*o.max_bytes);
    if (!n) return n.error().wrap("max_bytes");
    l.max_bytes = *n;
  }
  if (o.rate) {
    auto n = policy::parseCount(*o.rate, kMaxRate);
    if (!n) return n.error().wrap("rate");
    l.rate_per_second = static_cast<uint32_t>(*n);
  }
  if (o.burst) {
    auto n = policy::parseCount(*o.burst, kMaxRate);
    if (!n) return n.error().wrap("burst");
    l.burst = static_cast<uint32_t>(*n);
  }
  return {};
}

}  // namespace

Result<LeaseSpec> parseCredentialFlag(std::string_view text) {
  // The URL cannot hold ';' (hosts are LDH or IP literals), so the first ';' ends it.
  size_t semi = text.find(';');
  std::string_view head = text.substr(0, semi);
  size_t eq = head.find('=');
  size_t at = head.find('@', eq == std::string_view::npos ? 0 : eq);
  if (eq == std::string_view::npos || at == std::string_view::npos)
    return invalid("--credential: expected NAME=ENVVAR@scheme://host[:port][;key=value...]");
  Options o;
  if (semi != std::string_view::npos) {
    if (auto r = parseOptions(text.substr(semi + 1), o); !r) return r.error().wrap("--credential");
  }
  auto spec = buildSpec(head.substr(0, eq), head.substr(eq + 1, at - eq - 1), head.substr(at + 1),
                        o.header.value_or("Authorization"), o.format.value_or("Bearer {}"));
  if (!spec) return spec.error().wrap("--credential");
  if (auto r = applyLimits(o, spec->limits); !r) return r.error().wrap("--credential '" + spec->name + "'");
  return spec;
}

Result<LeaseSpec> leaseFromFields(std::string_view name, std::string_view env, std::string_view url,
                                  std::string_view header, std::string_view format) {
  auto spec = buildSpec(name, env, url, header, format);
  if (!spec) {
    std::string who = checkLeaseName(name).ok() ? "credentials '" + std::string(name) + "'" : "credentials";
    return spec.error().wrap(who);
  }
  return spec;
}

std::string credentialText(const LeaseSpec& spec) {
  std::string out = spec.name + "=" + spec.env + "@" + spec.grant.text();
  out += ";header=" + spec.header + ";format=" + spec.format;
  out += ";max_requests=" + std::to_string(spec.limits.max_requests);
  out += ";max_bytes=" + std::to_string(spec.limits.max_bytes);
  out += ";rate=" + std::to_string(spec.limits.rate_per_second);
  out += ";burst=" + std::to_string(spec.limits.burst);
  return out;
}

Result<void> checkLeasePath(std::string_view origin_form) {
  auto refuse = [](const char* why) { return Error(Errc::kRefused, std::string("lease path ") + why); };
  // A fragment is never part of a request target; an upstream that reads '#' literally
  // would see a different path than the one decided on.
  if (origin_form.find('#') != std::string_view::npos) return refuse("holds '#'");
  std::string_view path = origin_form.substr(0, origin_form.find('?'));
  // Percent-decoding only the bytes that matter here ('.', '/', '\\', ';'), as an upstream
  // that decodes before routing would: %2f%2f is then '//', and a%2f..%2f is a '..' segment.
  std::string decoded;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && path.size() - i >= 2 && (path[i + 1] == 'u' || path[i + 1] == 'U'))
      return refuse("holds a %u escape, which some servers decode");
    if (path[i] == '%') {
      // A '%' that starts no escape ("%%32%65", IIS-style double decoding) is malformed
      // (RFC 3986 section 2.1), and some servers decode what follows it anyway.
      if (path.size() - i < 3 || !std::isxdigit(static_cast<unsigned char>(path[i + 1])) ||
          !std::isxdigit(static_cast<unsigned char>(path[i + 2])))
        return refuse("holds a '%' that starts no %XX escape");
      std::string hex(path.substr(i + 1, 2));
      for (char& c : hex) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      // Escapes that only make sense to hide something from this check: a second round of
      // decoding (%25), NUL, overlong UTF-8 forms of ASCII (%c0, %c1, %e0%80-%e0%9f,
      // %f0%80-%f0%8f) and bytes that are never UTF-8 (%f5-%ff, the old 5- and 6-byte forms).
      if (hex == "25") return refuse("holds an encoded '%' (double encoding)");
      if (hex == "00") return refuse("holds an encoded NUL");
      if (hex == "c0" || hex == "c1" || hex >= "f5") return refuse("holds an overlong UTF-8 escape");
      if ((hex == "e0" || hex == "f0") && path.size() - i >= 6 && path[i + 3] == '%') {
        const char n = static_cast<char>(std::tolower(static_cast<unsigned char>(path[i + 4])));
        if (n == '8' || (hex == "e0" && n == '9')) return refuse("holds an overlong UTF-8 escape");
      }
      const char* known = hex == "2e"   ? "."
                          : hex == "2f" ? "/"
                          : hex == "5c" ? "\\"
                          : hex == "3b" ? ";"
                          : hex == "20" ? " "
                          : hex == "09" ? "\t"
                                        : nullptr;
      if (known != nullptr) {
        decoded += known;
        i += 2;
        continue;
      }
    }
    decoded += path[i];
  }
  if (decoded.substr(0, 2) == "//") return refuse("starts with '//' (or %2f%2f), which some servers read as another host");
  if (decoded.find('\\') != std::string::npos) return refuse("holds a backslash, which some servers read as '/'");
  size_t start = 0;
  while (start <= decoded.size()) {
    size_t end = decoded.find('/', start);
    if (end == std::string::npos) end = decoded.size();
    std::string_view seg = std::string_view(decoded).substr(start, end - start);
    // "..;x" is ".." to servers that strip path parameters (Tomcat and others), and ".. " is
    // ".." to servers that trim trailing blanks.
    std::string_view name = seg.substr(0, seg.find(';'));
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
    if (name == "." || name == "..") return refuse("holds a '.' or '..' segment (also encoded or with ';' parameters)");
    start = end + 1;
  }
  return {};
}

std::string leasePlaceholder(std::string_view name, std::span<const uint8_t, kPlaceholderRandomBytes> random) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "corral-lease-" + std::string(name) + "-";
  for (uint8_t b : random) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

}  // namespace corral::net
