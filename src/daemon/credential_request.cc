// SPDX-License-Identifier: Apache-2.0
// Parsing credential requests: the record's fields checked as a session's lease will use them.
#include "daemon/credential_request.h"

#include <algorithm>

#include "daemon/session_spec.h"
#include "net/lease_spec.h"
#include "net/lease_table.h"
#include "policy/egress_grant.h"

namespace corral::daemon {
namespace {

// What LeaseTable::load would refuse at a session's start, refused at add instead. The
// messages never hold the value.
Result<Secret> checkedValue(const Fields& f) {
  ASSIGN_OR_RETURN(auto v, f.string("value", net::kMaxSecretBytes));
  if (!v) return Error(Errc::kInvalidArgument, "body.value: required");
  Secret value(std::move(*v));
  const std::string_view s = value.revealForInjection();
  if (s.size() < net::kMinSecretBytes)
    return Error(Errc::kInvalidArgument, "body.value: at least " + std::to_string(net::kMinSecretBytes) + " bytes");
  if (std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    return Error(Errc::kInvalidArgument, "body.value: holds a control byte (a newline would split the injected header)");
  return value;
}

std::string envDefault(const std::string& name) {
  std::string out;
  for (char c : name) out.push_back(c == '-' ? '_' : static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c));
  return out;
}

}  // namespace

Result<AddCredential> parseAddCredential(const Json& j) {
  ASSIGN_OR_RETURN(Fields f, Fields::of(j, "body", {"name", "host", "header", "env", "value"}));
  AddCredential c;
  ASSIGN_OR_RETURN(auto name, f.string("name", 64));
  if (!name) return Error(Errc::kInvalidArgument, "body.name: required");
  RETURN_IF_ERROR(checkCredentialName(*name));
  c.name = *name;
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
  ASSIGN_OR_RETURN(c.value, checkedValue(f));
  return c;
}

Result<Secret> parseRotateCredential(const Json& j) {
  ASSIGN_OR_RETURN(Fields f, Fields::of(j, "body", {"value"}));
  return checkedValue(f);
}

}  // namespace corral::daemon
