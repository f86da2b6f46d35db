// SPDX-License-Identifier: Apache-2.0
// Fuzzes the daemon's profile parser and the narrowing of a profile by a create request's
// overrides. Input: a profile document, optionally "\n---\n" and an overrides document.
// Properties: errors are one line and start with where they are; a parsed profile narrowed by
// nothing, or by its own session, is accepted; whatever narrowing accepts is no wider than the
// profile, field by field.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "check.h"
#include "daemon/profile.h"
#include "policy/egress_grant.h"

namespace corral::fuzz {
namespace {

using daemon::Json;

bool covered(const std::string& asked, const std::vector<std::string>& grants) {
  for (const std::string& g : grants) {
    if (g == asked) return true;
    auto p = policy::egress::parseGrant(g), a = policy::egress::parseGrant(asked);
    if (p && a && p->wildcard && !a->wildcard && policy::egress::grantMatches(*p, a->scheme, a->host, a->port)) return true;
  }
  return false;
}

template <class T>
bool subsetOf(const std::vector<T>& a, const std::vector<T>& b) {
  return std::all_of(a.begin(), a.end(), [&](const T& x) { return std::find(b.begin(), b.end(), x) != b.end(); });
}

void checkNarrower(const daemon::SessionSpec& p, const daemon::SessionSpec& o, const std::string& detail) {
  PROPERTY(!o.net_proxy || p.net_proxy, detail);
  PROPERTY(o.limits.pids <= p.limits.pids, detail);
  PROPERTY(o.limits.open_files <= p.limits.open_files, detail);
  PROPERTY(o.limits.tmp_bytes <= p.limits.tmp_bytes, detail);
  PROPERTY(o.limits.file_size_bytes <= p.limits.file_size_bytes, detail);
  PROPERTY(o.limits.workspace_bytes <= p.limits.workspace_bytes, detail);
  PROPERTY(!p.limits.memory_bytes || (o.limits.memory_bytes && *o.limits.memory_bytes <= *p.limits.memory_bytes), detail);
  PROPERTY(!p.limits.cpu_time || (o.limits.cpu_time && *o.limits.cpu_time <= *p.limits.cpu_time), detail);
  PROPERTY(!p.ttl || (o.ttl && *o.ttl <= *p.ttl), detail);
  PROPERTY(subsetOf(o.limits.allow_weaker, p.limits.allow_weaker), detail);
  PROPERTY(subsetOf(o.credentials, p.credentials), detail);
  PROPERTY(subsetOf(o.allow_internal, p.allow_internal), detail);
  PROPERTY(std::all_of(o.allow.begin(), o.allow.end(), [&](const std::string& g) { return covered(g, p.allow); }), detail);
  for (const auto& b : o.ro_binds)
    PROPERTY(std::any_of(p.ro_binds.begin(), p.ro_binds.end(), [&](const sandbox::RoBind& x) { return x.host == b.host && x.sandbox == b.sandbox; }),
             detail);
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral;
  using namespace corral::fuzz;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t sep = input.find("\n---\n");
  const std::string_view doc = input.substr(0, sep);
  auto profile = daemon::parseProfile(doc);
  PROPERTY_ONE_LINE_ERROR(profile);
  if (!profile) {
    PROPERTY(profile.error().message().rfind("profile", 0) == 0, profile.error().message());
    return 0;
  }
  const std::string shown(doc.substr(0, 300));
  auto same = daemon::narrowProfile(*profile, Json::object());
  PROPERTY(same.ok(), shown + " | " + (same.ok() ? "" : same.error().message()));
  checkNarrower(profile->spec, *same, shown);
  auto self = daemon::narrowProfile(*profile, profile->session);
  PROPERTY(self.ok(), shown + " | narrowed by its own session: " + (self.ok() ? "" : self.error().message()));
  if (sep == std::string_view::npos) return 0;
  auto overrides = daemon::parseJson(input.substr(sep + 5));
  if (!overrides) return 0;
  auto narrowed = daemon::narrowProfile(*profile, *overrides);
  PROPERTY_ONE_LINE_ERROR(narrowed);
  if (narrowed) checkNarrower(profile->spec, *narrowed, shown + " | " + std::string(input.substr(sep + 5, 200)));
  return 0;
}
