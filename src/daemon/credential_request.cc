// SPDX-License-Identifier: Apache-2.0
// Parsing credential requests: the record's fields checked as a session's lease will use them.
#include "daemon/credential_request.h"

#include <algorithm>

#include "daemon/session_spec.h"
#include "net/lease_spec.h"
#include "net/lease_table.h"
#include "net/ssh_agent.h"
#include "policy/egress_grant.h"

namespace corral::daemon {
namespace {

// An OpenSSH key file is a few hundred bytes; a header value at most net::kMaxSecretBytes.
constexpr size_t kMaxSshKeyBytes = size_t{16} * 1024;

Result<Secret> rawValue(const Fields& f, size_t max) {
  ASSIGN_OR_RETURN(auto v, f.string("value", max));
  if (!v) return Error(Errc::kInvalidArgument, "body.value: required");
  return Secret(std::move(*v));
}

// What LeaseTable::load would refuse at a session's start, refused at add instead. The
// messages never hold the value.
Result<void> checkHeaderValue(const Secret& value) {
  const std::string_view s = value.revealForInjection();
  if (s.size() > net::kMaxSecretBytes)
    return Error(Errc::kInvalidArgument, "body.value: at most " + std::to_string(net::kMaxSecretBytes) + " bytes");
  if (s.size() < net::kMinSecretBytes)
    return Error(Errc::kInvalidArgument, "body.value: at least " + std::to_string(net::kMinSecretBytes) + " bytes");
  if (std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    return Error(Errc::kInvalidArgument, "body.value: holds a control byte (a newline would split the injected header)");
  return {};
}

std::string envDefault(const std::string& name) {
  std::string out;
  for (char c : name) out.push_back(c == '-' ? '_' : static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c));
  return out;
}

}  // namespace

Result<std::string> checkCredentialValue(std::string_view kind, const Secret& value) {
  if (kind == kSshKeyKind) {
    if (value.size() > kMaxSshKeyBytes)
      return Error(Errc::kInvalidArgument, "body.value: an ssh key file is at most " + std::to_string(kMaxSshKeyBytes) + " bytes");
    auto fp = net::sshKeyFileFingerprint(value.revealForInjection());
    if (!fp) return Error(Errc::kInvalidArgument, "body.value: " + fp.error().message());
    return *fp;
  }
  RETURN_IF_ERROR(checkHeaderValue(value));
  return std::string();
}

Result<AddCredential> parseAddCredential(const Json& j) {
  ASSIGN_OR_RETURN(Fields f, Fields::of(j, "body", {"name", "kind", "host", "header", "env", "value"}));
  AddCredential c;
  ASSIGN_OR_RETURN(auto name, f.string("name", 64));
  if (!name) return Error(Errc::kInvalidArgument, "body.name: required");
  RETURN_IF_ERROR(checkCredentialName(*name));
  c.name = *name;
  ASSIGN_OR_RETURN(auto kind, f.string("kind", 16));
  if (kind && *kind != "header" && *kind != kSshKeyKind) return Error(Errc::kInvalidArgument, "body.kind: \"header\" or \"ssh-key\"");
  if (kind && *kind == kSshKeyKind) {
    // Used only through a session's ssh agent: no host, header or variable of its own (the
    // agent signs for the sshd behind a tcp:// grant of the session).
    for (const char* k : {"host", "header", "env"})
      if (j.contains(k)) return Error(Errc::kInvalidArgument, std::string("body.") + k + ": not for an ssh-key record");
    c.kind = kSshKeyKind;
    c.header.clear();
    c.env.clear();
    ASSIGN_OR_RETURN(c.value, rawValue(f, kMaxSshKeyBytes));
    ASSIGN_OR_RETURN(c.format, checkCredentialValue(c.kind, c.value));
    return c;
  }
  ASSIGN_OR_RETURN(auto host, f.string("host", 1024));
  if (!host) return Error(Errc::kInvalidArgument, "body.host: required");
  auto grant = net::parseLeaseUrl(*host);
  if (!grant) return grant.error().wrap("body.host");
  c.host = grant->text();
  // "Name: format with {}" (curl's -H shape); the default is "Authorization: Bearer {}".
  ASSIGN_OR_RETURN(auto header, f.string("header", net::kMaxHeaderName + net::kMaxFormat + 2));
  if (header) {
    const size_t colon = header->find(':');
    if (colon == std::string::npos) return Error(Errc::kInvalidArgument, "body.header: 'Name: format', e.g. 'Authorization: Bearer {}'");
    c.header = header->substr(0, colon);
    c.format = header->substr(colon + 1);
    c.format.erase(0, c.format.find_first_not_of(' '));
    if (auto h = net::checkHeaderName(c.header); !h) return h.error().wrap("body.header");
    if (auto fm = net::checkFormat(c.format); !fm) return fm.error().wrap("body.header");
  }
  ASSIGN_OR_RETURN(auto env, f.string("env", 128));
  c.env = env.value_or(envDefault(c.name));
  if (auto e = net::checkEnvName(c.env); !e) return e.error().wrap("body.env");
  for (std::string_view proxy_name : policy::egress::kProxyEnvironmentNames)
    if (c.env == proxy_name) return Error(Errc::kInvalidArgument, "body.env: " + c.env + " is the proxy's own variable");
  ASSIGN_OR_RETURN(c.value, rawValue(f, net::kMaxSecretBytes));
  RETURN_IF_ERROR(checkHeaderValue(c.value));
  return c;
}

Result<Secret> parseRotateCredential(const Json& j) {
  ASSIGN_OR_RETURN(Fields f, Fields::of(j, "body", {"value"}));
  return rawValue(f, kMaxSshKeyBytes);
}

}  // namespace corral::daemon
