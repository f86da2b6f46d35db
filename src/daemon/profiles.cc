// SPDX-License-Identifier: Apache-2.0
// Profile records: validated on the way in, versions counted, owned per uid.
#include "daemon/profiles.h"

#include "base/log.h"
#include "daemon/sessions.h"
#include "daemon/warm_pool.h"
#include "policy/units.h"

namespace corral::daemon {
namespace {

Json rowJson(const ProfileRow& r, bool with_doc) {
  Json j = {{"name", r.name}, {"owner_uid", r.owner_uid}, {"version", r.version}, {"created_at", r.created_at}};
  if (r.versions) j["versions"] = r.versions;
  auto doc = parseJson(r.doc);
  if (doc && doc->is_object()) {
    if (with_doc) j["profile"] = *doc;
    else if (doc->contains("description") && (*doc)["description"].is_string()) j["description"] = (*doc)["description"];
  }
  return j;
}

Error noProfile(const std::string& name, int64_t version) {
  return Error(kNotFound, "no profile '" + policy::printable(name) + "'" + (version ? " version " + std::to_string(version) : ""));
}

}  // namespace

Result<Json> Profiles::add(const Peer& peer, std::string_view text) {
  ASSIGN_OR_RETURN(Profile p, parseProfile(text));
  ASSIGN_OR_RETURN(Json doc, parseJson(text));
  if (pool_ && p.warm > 0)
    if (const int64_t others = pool_->warmExcept(peer.uid, p.name); others + p.warm > kMaxWarm)
      return Error(Errc::kInvalidArgument, "profile.warm: " + std::to_string(p.warm) + " more would make the daemon's warm sandboxes " +
                                               std::to_string(others + p.warm) + ", over its cap of " + std::to_string(kMaxWarm));
  ASSIGN_OR_RETURN(int64_t version, store_.addProfileVersion(peer.uid, p.name, dumpJson(doc)));
  audit_.append("profile_added", peer, {{"profile", p.name}, {"version", version}});
  log::info("profile_added", "profile=" + p.name + " version=" + std::to_string(version) + " peer_uid=" + std::to_string(peer.uid));
  if (pool_)
    if (auto r = pool_->refresh(); !r) log::warn("pool_refresh_failed", "reason=" + log::value(r.error().message()));
  ASSIGN_OR_RETURN(auto row, store_.profile(peer.uid, p.name, version));
  if (!row) return noProfile(p.name, version);
  return rowJson(*row, true);
}

Result<Json> Profiles::list(const Peer& peer) {
  ASSIGN_OR_RETURN(auto rows, store_.profiles(peer.uid == 0 ? -1 : static_cast<int64_t>(peer.uid)));
  Json out = Json::array();
  for (const ProfileRow& r : rows) out.push_back(rowJson(r, false));
  return Json{{"profiles", out}};
}

Result<Json> Profiles::show(const Peer& peer, const std::string& name, int64_t version) {
  if (!checkCredentialName(name)) return noProfile(name, 0);
  ASSIGN_OR_RETURN(auto row, store_.profile(peer.uid, name, version));
  if (!row) return noProfile(name, version);
  return rowJson(*row, true);
}

Result<Json> Profiles::remove(const Peer& peer, const std::string& name) {
  if (!checkCredentialName(name)) return noProfile(name, 0);
  ASSIGN_OR_RETURN(int64_t n, store_.deleteProfile(peer.uid, name));
  if (n == 0) return noProfile(name, 0);
  if (pool_)
    if (auto r = pool_->refresh(); !r) log::warn("pool_refresh_failed", "reason=" + log::value(r.error().message()));
  audit_.append("profile_removed", peer, {{"profile", name}, {"versions", n}});
  log::info("profile_removed", "profile=" + name + " versions=" + std::to_string(n) + " peer_uid=" + std::to_string(peer.uid));
  return Json{{"name", name}, {"removed", true}, {"versions", n}};
}

Result<Profiles::Resolved> Profiles::resolve(const Peer& peer, const std::string& name, int64_t version) {
  if (!checkCredentialName(name)) return Error(Errc::kInvalidArgument, "body.profile: " + noProfile(name, 0).context());
  ASSIGN_OR_RETURN(auto row, store_.profile(peer.uid, name, version));
  if (!row) return Error(Errc::kInvalidArgument, "body.profile: " + noProfile(name, version).context());
  ASSIGN_OR_RETURN(Profile p, parseProfile(row->doc));
  return Resolved{std::move(p), row->version};
}

}  // namespace corral::daemon
