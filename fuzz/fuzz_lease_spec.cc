// SPDX-License-Identifier: Apache-2.0
// Fuzzes the credential lease grammar: --credential text and the manifest's five fields.
// Accepted specs obey every field rule and round-trip through their canonical text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "net/lease_spec.h"

namespace corral::fuzz {
namespace {

bool nameOk(std::string_view n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

bool envOk(std::string_view e) {
  if (e.empty() || (e[0] >= '0' && e[0] <= '9')) return false;
  for (char c : e)
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

bool headerOk(std::string h) {
  if (h.empty()) return false;
  for (char& c : h) {
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) return false;
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  for (std::string_view framing : {"host", "content-length", "transfer-encoding", "connection"})
    if (h == framing) return false;
  return true;
}

bool formatOk(std::string_view f) {
  size_t first = f.find("{}");
  if (first == std::string_view::npos || f.find("{}", first + 2) != std::string_view::npos) return false;
  return f.find('\r') == std::string_view::npos && f.find('\n') == std::string_view::npos &&
         f.find('\0') == std::string_view::npos;
}

void checkSpec(const net::LeaseSpec& s, std::string_view from) {
  std::string shown(from);
  PROPERTY(nameOk(s.name), "bad name accepted from " + shown);
  PROPERTY(envOk(s.env), "bad env accepted from " + shown);
  PROPERTY(headerOk(s.header), "bad header accepted from " + shown);
  PROPERTY(formatOk(s.format), "bad format accepted from " + shown);
  PROPERTY(!s.grant.wildcard, "wildcard credential url accepted from " + shown);
  PROPERTY(s.limits.rate_per_second >= 1 && s.limits.burst >= 1 && s.limits.max_requests >= 1 && s.limits.max_bytes >= 1,
           "zero limit accepted from " + shown);
  if (s.format.find(';') != std::string::npos) return;  // only the manifest can spell it
  std::string text = net::credentialText(s);
  auto again = net::parseCredentialFlag(text);
  PROPERTY(again.ok(), "canonical text refused: " + text + " -> " + (again.ok() ? "" : again.error().message()));
  PROPERTY(*again == s, "canonical text does not round-trip: " + text);
  PROPERTY(net::credentialText(*again) == text, "canonical text not idempotent: " + text);
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto flag = corral::net::parseCredentialFlag(text);
  PROPERTY_ONE_LINE_ERROR(flag);
  if (flag.ok()) corral::fuzz::checkSpec(*flag, text);

  // The same bytes as the manifest's five fields, separated by newlines.
  std::vector<std::string_view> f;
  size_t start = 0;
  while (f.size() < 4) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) break;
    f.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  f.push_back(text.substr(std::min(start, text.size())));
  while (f.size() < 5) f.push_back(f.size() == 3 ? "Authorization" : "Bearer {}");
  auto fields = corral::net::leaseFromFields(f[0], f[1], f[2], f[3], f[4]);
  PROPERTY_ONE_LINE_ERROR(fields);
  if (fields.ok()) corral::fuzz::checkSpec(*fields, text);
  return 0;
}
