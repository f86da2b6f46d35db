// SPDX-License-Identifier: Apache-2.0
// The router and the error format shared by every route.
#include "daemon/api.h"

#include "daemon/sessions.h"

namespace corral::daemon {

ApiResponse errorResponse(int status, std::string_view code, std::string_view message) {
  return {status, Json{{"error", {{"code", std::string(code)}, {"message", std::string(message)}}}}, nullptr};
}

ApiResponse errorResponse(const Error& e) {
  const int c = e.code();
  if (c == kNotFound) return errorResponse(404, "not_found", e.context());
  if (c == kConflict) return errorResponse(409, "conflict", e.context());
  if (c == static_cast<int>(Errc::kInvalidArgument)) return errorResponse(400, "invalid_request", e.message());
  if (c == static_cast<int>(Errc::kRefused) || c == static_cast<int>(Errc::kLimit) || c == static_cast<int>(Errc::kUnsupported))
    return errorResponse(422, "sandbox_refused", e.message());
  return errorResponse(500, "internal", e.message());
}

ApiResponse answer(Result<Json> r, int ok_status) {
  if (!r) return errorResponse(r.error());
  return {ok_status, std::move(*r), nullptr};
}

Result<Json> jsonBody(const ApiRequest& req) {
  if (req.body.empty()) return Error(Errc::kInvalidArgument, "a JSON body is required");
  return parseJson(req.body);
}

bool isStreamedUpload(const std::string& method, const std::vector<std::string>& segments) {
  if (segments.size() < 5 || segments[0] != "v1" || segments[1] != "sessions") return false;
  return (method == "PUT" && segments[3] == "files") ||
         (method == "POST" && segments.size() == 6 && segments[3] == "commands" && segments[5] == "stdin");
}

ApiResponse route(const ApiRequest& req, ApiContext& ctx) {
  if (req.segments.empty() || req.segments[0] != "v1") return errorResponse(404, "not_found", "no such resource (the API is under /v1/)");
  for (auto* r : {&routeSystem, &routeSessions, &routeCommands, &routeFiles, &routeCredentials, &routeProfiles, &routeEvents})
    if (auto res = (*r)(req, ctx)) return std::move(*res);
  return errorResponse(404, "not_found", "no such resource");
}

}  // namespace corral::daemon
