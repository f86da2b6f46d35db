// SPDX-License-Identifier: Apache-2.0
// /v1/credentials, /v1/credentials/{name} and .../rotate: write-only values, metadata out.
#include "daemon/api.h"
#include "daemon/credentials.h"
#include "daemon/sessions.h"

namespace corral::daemon {

std::optional<ApiResponse> routeCredentials(const ApiRequest& req, ApiContext& ctx) {
  const auto& seg = req.segments;
  if (seg.size() < 2 || seg[1] != "credentials" || seg.size() > 4) return std::nullopt;
  const bool takes_body = req.method == "POST";
  if (!takes_body && !req.body.empty()) return errorResponse(400, "invalid_request", req.method + " takes no body");
  // Uses are counted by the shims: collected first, so an answer shows every use so far.
  auto collect = [&] { ctx.sessions.collectLeaseUses(req.peer.uid == 0 ? -1 : static_cast<int64_t>(req.peer.uid)); };
  if (seg.size() == 2) {
    if (req.method == "GET") {
      collect();
      return answer(ctx.credentials.list(req.peer));
    }
    if (req.method != "POST") return errorResponse(405, "method_not_allowed", "GET or POST");
    auto body = jsonBody(req);
    if (!body) return errorResponse(body.error());
    auto cmd = parseAddCredential(*body);
    if (!cmd) return errorResponse(cmd.error());
    return answer(ctx.credentials.add(req.peer, std::move(*cmd)), 201);
  }
  if (seg.size() == 4) {
    if (seg[3] != "rotate") return errorResponse(404, "not_found", "no such resource");
    if (req.method != "POST") return errorResponse(405, "method_not_allowed", "POST");
    auto body = jsonBody(req);
    if (!body) return errorResponse(body.error());
    auto value = parseRotateCredential(*body);
    if (!value) return errorResponse(value.error());
    return answer(ctx.credentials.rotate(req.peer, seg[2], *value, ctx.sessions));
  }
  if (req.method == "GET") {
    collect();
    return answer(ctx.credentials.show(req.peer, seg[2]));
  }
  if (req.method == "DELETE") return answer(ctx.credentials.remove(req.peer, seg[2]));
  return errorResponse(405, "method_not_allowed", "GET or DELETE");
}

}  // namespace corral::daemon
