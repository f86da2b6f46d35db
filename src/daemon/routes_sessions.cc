// SPDX-License-Identifier: Apache-2.0
// /v1/sessions and /v1/sessions/{id}: create, list, show, remove.
#include "daemon/api.h"
#include "daemon/session_spec.h"
#include "daemon/sessions.h"

namespace corral::daemon {

std::optional<ApiResponse> routeSessions(const ApiRequest& req, ApiContext& ctx) {
  const auto& seg = req.segments;
  if (seg.size() < 2 || seg[1] != "sessions" || seg.size() > 3) return std::nullopt;
  if (req.method != "POST" && !req.body.empty()) return errorResponse(400, "invalid_request", req.method + " takes no body");
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
  if (req.method == "DELETE") return answer(ctx.sessions.remove(req.peer, seg[2]));
  return errorResponse(405, "method_not_allowed", "GET or DELETE");
}

}  // namespace corral::daemon
