// SPDX-License-Identifier: Apache-2.0
// /v1/sessions and /v1/sessions/{id}: create, list, show, remove; .../pause and .../resume.
#include "daemon/api.h"
#include "daemon/session_spec.h"
#include "daemon/sessions.h"

namespace corral::daemon {

std::optional<ApiResponse> routeSessions(const ApiRequest& req, ApiContext& ctx) {
  const auto& seg = req.segments;
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
    auto spec = parseSessionSpec(*body);
    if (!spec) return errorResponse(spec.error());
    return answer(ctx.sessions.create(req.peer, *spec), 201);
  }
  if (req.method == "GET") return answer(ctx.sessions.show(req.peer, seg[2]));
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
