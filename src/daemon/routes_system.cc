// SPDX-License-Identifier: Apache-2.0
// GET /v1/health and GET /v1/version.
#include "daemon/api.h"
#include "daemon/store.h"

namespace corral::daemon {

std::optional<ApiResponse> routeSystem(const ApiRequest& req, ApiContext&) {
  if (req.segments.size() != 2 || (req.segments[1] != "health" && req.segments[1] != "version")) return std::nullopt;
  if (req.method != "GET") return errorResponse(405, "method_not_allowed", "only GET");
  if (!req.body.empty()) return errorResponse(400, "invalid_request", "GET takes no body");
  if (req.segments[1] == "health") return ApiResponse{200, {{"status", "ok"}}, nullptr};
  return ApiResponse{200, {{"version", "0.1.0"}, {"api", "v1"}, {"schema_version", kSchemaVersion}}, nullptr};
}

}  // namespace corral::daemon
