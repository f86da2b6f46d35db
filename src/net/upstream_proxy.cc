// SPDX-License-Identifier: Apache-2.0
// Parent-proxy configuration: the URL, the host environment, NO_PROXY, Basic credentials.
#include "net/upstream_proxy.h"

#include <algorithm>

namespace corral::net {
namespace {

namespace eg = policy::egress;

Error invalid(std::string why) { return Error(Errc::kInvalidArgument, "upstream proxy: " + std::move(why)); }

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// RFC 3986 percent-decoding of userinfo; false on a broken escape.
bool percentDecode(std::string_view in, std::string* out) {
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size() || hexValue(in[i + 1]) < 0 || hexValue(in[i + 2]) < 0) return false;
    out->push_back(static_cast<char>(hexValue(in[i + 1]) * 16 + hexValue(in[i + 2])));
    i += 2;
  }
  return true;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::vector<std::string> noProxyList(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = std::min(text.find(',', start), text.size());
    std::string entry = lower(text.substr(start, end - start));
    entry.erase(0, entry.find_first_not_of(" \t"));
    entry.erase(entry.find_last_not_of(" \t") + 1);
    if (!entry.empty()) out.push_back(std::move(entry));
    start = end + 1;
  }
  return out;
}

}  // namespace

// Base64 by hand (RFC 4648, padded): the static launcher parses --upstream-proxy too, and it
// links no OpenSSL.
std::string basicAuthorization(std::string_view user_colon_password) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out = "Basic ";
  const auto* in = reinterpret_cast<const unsigned char*>(user_colon_password.data());
  const size_t n = user_colon_password.size();
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = (uint32_t{in[i]} << 16) | (i + 1 < n ? uint32_t{in[i + 1]} << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kAlphabet[v & 63] : '=';
  }
  return out;
}

std::string UpstreamProxy::text() const { return eg::authorityText(host) + ":" + std::to_string(port); }

bool UpstreamProxy::bypasses(const eg::Host& dest) const {
  const std::string name = eg::authorityText(dest);
  for (const std::string& e : no_proxy) {
    if (e == "*") return true;
    std::string_view d = e;
    if (d.front() == '.') d.remove_prefix(1);
    if (name == d) return true;
    if (dest.kind == eg::HostKind::kName && name.size() > d.size() && name.ends_with(d) &&
        name[name.size() - d.size() - 1] == '.')
      return true;
  }
  return false;
}

Result<UpstreamProxy> parseUpstreamProxy(std::string_view url) {
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos) return invalid("expected http://[user:password@]host[:port] (URL not shown)");
  if (lower(url.substr(0, sep)) != "http")
    return invalid("the parent is spoken to in plain HTTP: the scheme must be http (URL not shown)");
  std::string_view rest = url.substr(sep + 3);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find_first_of("/?#") != std::string_view::npos) return invalid("a proxy URL has no path, query or fragment (URL not shown)");
  UpstreamProxy p;
  if (size_t at = rest.rfind('@'); at != std::string_view::npos) {
    std::string userinfo;
    if (!percentDecode(rest.substr(0, at), &userinfo)) return invalid("the userinfo has a broken %-escape (URL not shown)");
    if (userinfo.find(':') == std::string::npos) userinfo += ":";
    p.authorization = std::make_unique<Secret>(basicAuthorization(userinfo));
    std::fill(userinfo.begin(), userinfo.end(), '\0');
    rest.remove_prefix(at + 1);
  }
  auto authority = eg::parseAuthority(rest);
  if (!authority) return invalid("the host or port is not valid (URL not shown)");
  p.host = std::move(authority->host);
  p.port = authority->port.value_or(3128);
  return p;
}

Result<UpstreamProxy> upstreamFromEnvironment(const EnvLookup& env) {
  std::optional<std::string> url;
  for (std::string_view name : {"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"}) {
    url = env(name);
    if (url && !url->empty()) break;
  }
  if (!url || url->empty()) return invalid("env: none of HTTPS_PROXY, https_proxy, HTTP_PROXY, http_proxy is set");
  // A bare host:port, as many environments write it, means http.
  if (url->find("://") == std::string::npos) url->insert(0, "http://");
  auto p = parseUpstreamProxy(*url);
  std::fill(url->begin(), url->end(), '\0');
  if (!p) return p.error();
  for (std::string_view name : {"NO_PROXY", "no_proxy"}) {
    if (auto v = env(name); v && !v->empty()) {
      p->no_proxy = noProxyList(*v);
      break;
    }
  }
  return p;
}

}  // namespace corral::net
