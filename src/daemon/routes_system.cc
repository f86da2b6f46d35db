// SPDX-License-Identifier: Apache-2.0
// GET /v1/health, GET /v1/version and GET /v1/pool.
#include "daemon/api.h"
#include "daemon/profile.h"
#include "daemon/sessions.h"
#include "daemon/store.h"
#include "daemon/warm_pool.h"

namespace corral::daemon {

std::optional<ApiResponse> routeSystem(const ApiRequest& req, ApiContext& ctx) {
  if (req.segments.size() != 2 || (req.segments[1] != "health" && req.segments[1] != "version" && req.segments[1] != "pool"))
    return std::nullopt;
  if (req.method != "GET") return errorResponse(405, "method_not_allowed", "only GET");
  if (!req.body.empty()) return errorResponse(400, "invalid_request", "GET takes no body");
  if (req.segments[1] == "pool") {
    WarmPool* pool = ctx.sessions.pool();
    return ApiResponse{200, pool ? pool->status(req.peer) : Json{{"cap", kMaxWarm}, {"target_total", 0}, {"pools", Json::array()}}, nullptr};
  }
  if (req.segments[1] == "health") return ApiResponse{200, {{"status", "ok"}}, nullptr};
  return ApiResponse{200, {{"version", "0.1.0"}, {"api", "v1"}, {"schema_version", kSchemaVersion}}, nullptr};
}

}  // namespace corral::daemon
