// SPDX-License-Identifier: Apache-2.0
// /v1/sessions and /v1/sessions/{id}: create, list, show, remove; .../pause and .../resume.
#include "daemon/api.h"
#include "daemon/credentials.h"
#include "daemon/profiles.h"
#include "daemon/session_spec.h"
#include "daemon/sessions.h"
#include "daemon/terminal_hold.h"

namespace corral::daemon {
namespace {

// The spec: the body's own, or a profile's narrowed by the body; with the profile's startup.
struct Made {
  SessionSpec spec;
  std::optional<StartupCommand> startup;
};

Result<Made> specOf(const ApiRequest& req, ApiContext& ctx, Json body) {
  if (!body.is_object() || !body.contains("profile")) {
    if (body.is_object() && body.contains("profile_version"))
      return Error(Errc::kInvalidArgument, "body.profile_version: needs a profile");
    ASSIGN_OR_RETURN(SessionSpec spec, parseSessionSpec(body));
    return Made{std::move(spec), std::nullopt};
  }
  Json which = {{"profile", body["profile"]}};
  if (body.contains("profile_version")) which["profile_version"] = body["profile_version"];
  ASSIGN_OR_RETURN(Fields f, Fields::of(which, "body", {"profile", "profile_version"}));
  ASSIGN_OR_RETURN(auto name, f.string("profile", 64));
  ASSIGN_OR_RETURN(auto version, f.count("profile_version", INT32_MAX));
  body.erase("profile");
  body.erase("profile_version");
  ASSIGN_OR_RETURN(auto resolved, ctx.profiles.resolve(req.peer, name.value_or(""), static_cast<int64_t>(version.value_or(0))));
  auto spec = narrowProfile(resolved.profile, body);
  if (!spec) return spec.error().wrap("profile '" + resolved.profile.name + "' version " + std::to_string(resolved.version));
  spec->profile = resolved.profile.name;
  spec->profile_version = resolved.version;
  return Made{std::move(*spec), resolved.profile.startup};
}

ApiResponse createSession(const ApiRequest& req, ApiContext& ctx, Json body) {
  auto made = specOf(req, ctx, std::move(body));
  if (!made) return errorResponse(made.error());
  auto leases = ctx.credentials.lease(req.peer, made->spec.credentials, made->spec.ssh_key);
  if (!leases) return errorResponse(leases.error());
  auto session = ctx.sessions.create(req.peer, made->spec, *leases);
  if (!session) return answer(std::move(session), 201);
  const std::string id = (*session)["id"].get<std::string>();
  // A rotation between the lease and the session's lease rows did not list it: caught up here.
  if (auto caught = ctx.credentials.catchUp(id, req.peer.uid, *leases, ctx.sessions); !caught) {
    (void)ctx.sessions.remove(req.peer, id);
    return errorResponse(caught.error().wrap("session " + id + " removed"));
  }
  if (!made->startup) return answer(std::move(session), 201);
  // A profile's startup: the session is answered once ready, or removed when it never was.
  auto started = ctx.sessions.runStartup(req.peer, id, *made->startup);
  if (!started) {
    (void)ctx.sessions.remove(req.peer, id);
    return errorResponse(started.error().wrap("session " + id + " removed"));
  }
  (*session)["startup"] = *started;
  return answer(std::move(session), 201);
}

// POST /v1/sessions/{id}/recover, body optional: {"env": ["K=V"]}. The session's records are
// leased again (their current versions).
ApiResponse recoverSession(const ApiRequest& req, ApiContext& ctx, const std::string& id) {
  std::vector<std::pair<std::string, std::string>> env;
  if (!req.body.empty()) {
    auto body = jsonBody(req);
    if (!body) return errorResponse(body.error());
    auto f = Fields::of(*body, "body", {"env"});
    if (!f) return errorResponse(f.error());
    auto list = f->strings("env", 256, 65536);
    if (!list) return errorResponse(list.error());
    auto pairs = envPairs(list->value_or(std::vector<std::string>{}), "body.env");
    if (!pairs) return errorResponse(pairs.error());
    env = std::move(*pairs);
  }
  auto shown = ctx.sessions.show(req.peer, id);
  if (!shown) return errorResponse(shown.error());
  std::vector<std::string> names;
  if (shown->contains("credentials") && (*shown)["credentials"].is_array())
    for (const Json& n : (*shown)["credentials"])
      if (n.is_string()) names.push_back(n.get<std::string>());
  std::optional<std::string> ssh_key;
  if (shown->contains("ssh_key") && (*shown)["ssh_key"].is_string()) ssh_key = (*shown)["ssh_key"].get<std::string>();
  // The records are the session's owner's, whoever asks: root recovering another uid's session
  // must not lease root's records of the same names into that uid's sandbox.
  if (!shown->contains("owner_uid") || !(*shown)["owner_uid"].is_number_integer()) return errorResponse(500, "internal", "session " + id + " has no owner");
  Peer owner = req.peer;
  owner.uid = static_cast<uid_t>((*shown)["owner_uid"].get<int64_t>());
  auto leases = ctx.credentials.lease(owner, names, ssh_key);
  if (!leases) return errorResponse(leases.error());
  auto recovered = ctx.sessions.recover(req.peer, id, env, *leases);
  if (recovered)  // as at create: a rotation that ran since the lease (a failure here loses it again)
    if (auto caught = ctx.credentials.catchUp(id, owner.uid, *leases, ctx.sessions); !caught) return errorResponse(caught.error());
  return answer(std::move(recovered));
}

}  // namespace

std::optional<ApiResponse> routeSessions(const ApiRequest& req, ApiContext& ctx) {
  const auto& seg = req.segments;
  if (seg.size() == 4 && seg[1] == "sessions" && seg[3] == "recover") {
    if (req.method != "POST") return errorResponse(405, "method_not_allowed", "POST");
    return recoverSession(req, ctx, seg[2]);
  }
  if (seg.size() == 4 && seg[1] == "sessions" && (seg[3] == "pause" || seg[3] == "resume")) {
    if (req.method != "POST") return errorResponse(405, "method_not_allowed", "POST");
    if (!req.body.empty() && req.body != "{}") return errorResponse(400, "invalid_request", "pause and resume take no body");
    return answer(seg[3] == "pause" ? ctx.sessions.pause(req.peer, seg[2]) : ctx.sessions.resume(req.peer, seg[2]));
  }
  if (seg.size() < 2 || seg[1] != "sessions" || seg.size() > 3) return std::nullopt;
  if (req.method != "POST" && req.method != "DELETE" && !req.body.empty())
    return errorResponse(400, "invalid_request", req.method + " takes no body");
  if (seg.size() == 2) {
    if (req.method == "GET") return answer(ctx.sessions.list(req.peer));
    if (req.method != "POST") return errorResponse(405, "method_not_allowed", "GET or POST");
    auto body = jsonBody(req);
    if (!body) return errorResponse(body.error());
    return createSession(req, ctx, *body);
  }
  if (req.method == "GET") {
    auto shown = ctx.sessions.show(req.peer, seg[2]);
    if (shown && shown->is_object()) (*shown)["terminals"] = terminalHold().list(seg[2]);  // attached and detached ones
    return answer(std::move(shown));
  }
  if (req.method == "DELETE") {
    // An optional body: {"keep_workspace": true}.
    bool keep = false;
    if (!req.body.empty()) {
      auto body = jsonBody(req);
      if (!body) return errorResponse(body.error());
      auto f = Fields::of(*body, "body", {"keep_workspace"});
      if (!f) return errorResponse(f.error());
      auto k = f->boolean("keep_workspace");
      if (!k) return errorResponse(k.error());
      keep = k->value_or(false);
    }
    return answer(ctx.sessions.remove(req.peer, seg[2], keep));
  }
  return errorResponse(405, "method_not_allowed", "GET or DELETE");
}

}  // namespace corral::daemon
