// SPDX-License-Identifier: Apache-2.0
// /v1/profiles, /v1/profiles/{name} and /v1/profiles/{name}/versions/{n}.
#include <cstdlib>

#include "daemon/api.h"
#include "daemon/profiles.h"

namespace corral::daemon {

std::optional<ApiResponse> routeProfiles(const ApiRequest& req, ApiContext& ctx) {
  const auto& seg = req.segments;
  if (seg.size() < 2 || seg[1] != "profiles" || seg.size() > 5 || seg.size() == 4) return std::nullopt;
  if (req.method != "POST" && !req.body.empty()) return errorResponse(400, "invalid_request", req.method + " takes no body");
  if (seg.size() == 2) {
    if (req.method == "GET") return answer(ctx.profiles.list(req.peer));
    if (req.method != "POST") return errorResponse(405, "method_not_allowed", "GET or POST");
    if (req.body.empty()) return errorResponse(400, "invalid_request", "a profile document is required");
    return answer(ctx.profiles.add(req.peer, req.body), 201);
  }
  if (seg.size() == 5) {
    if (seg[3] != "versions") return errorResponse(404, "not_found", "no such resource");
    if (req.method != "GET") return errorResponse(405, "method_not_allowed", "GET");
    char* end = nullptr;
    const long long v = std::strtoll(seg[4].c_str(), &end, 10);
    if (seg[4].empty() || *end != '\0' || v < 1 || seg[4][0] == '0') return errorResponse(404, "not_found", "no such version");
    return answer(ctx.profiles.show(req.peer, seg[2], v));
  }
  if (req.method == "GET") return answer(ctx.profiles.show(req.peer, seg[2], 0));
  if (req.method == "DELETE") return answer(ctx.profiles.remove(req.peer, seg[2]));
  return errorResponse(405, "method_not_allowed", "GET or DELETE");
}

}  // namespace corral::daemon
