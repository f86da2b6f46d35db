// SPDX-License-Identifier: Apache-2.0
// One API request as the routes see it (parsed, size-checked, with the peer), and what they
// answer: a status and a JSON body, or a stream of NDJSON lines.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "daemon/json_fields.h"
#include "daemon/peer.h"

namespace corral::daemon {

class Sessions;
class Credentials;
class Profiles;
class EventBus;

// Pulls a streamed request body: sink gets each piece as it arrives (at most 64 KiB) and
// returns false to stop; the result is the byte count, or why the body could not be read.
using BodySink = std::function<Result<void>(std::string_view)>;
using BodyStream = std::function<Result<uint64_t>(const BodySink&)>;

struct ApiRequest {
  std::string method;                 // "GET", "POST", "DELETE", ...
  std::vector<std::string> segments;  // "/v1/sessions/x" -> {"v1", "sessions", "x"}
  std::string body;                   // whole (at most kMaxBodyBytes), unless streamed
  BodyStream body_stream;             // set instead of body for uploads (isStreamedUpload)
  std::string upgrade;                // the Upgrade header's protocol when the request asks for one
  Peer peer;
};

// PUT /v1/sessions/{id}/files/... and POST .../commands/{n}/stdin: the body is streamed to the
// handler, never held whole.
bool isStreamedUpload(const std::string& method, const std::vector<std::string>& segments);

// Writes one chunk to the client; false once it is gone. An empty piece ends the body at once
// (the last chunk): what the handler does afterwards (closing an inotify instance, a database
// write) no longer delays the client, and every later write returns false.
using ChunkWriter = std::function<bool(std::string_view)>;

struct ApiResponse {
  int status = 200;
  Json body;
  std::function<void(const ChunkWriter&)> stream;  // set: a chunked body of content_type
  std::string content_type = "application/x-ndjson";
  // Set (status 101): the server answers Switching Protocols to `upgrade_protocol`, then hands
  // the connection over: its fd and the bytes already read past the request's head.
  std::function<void(int fd, std::string early)> upgrade;
  std::string upgrade_protocol;
};

struct ApiContext {
  Sessions& sessions;
  Credentials& credentials;
  Profiles& profiles;
  EventBus& events;
};

// {"error": {"code", "message"}} with the status that fits the error's code.
ApiResponse errorResponse(const Error& e);
ApiResponse errorResponse(int status, std::string_view code, std::string_view message);
// A handler's result: its value with ok_status, or its error as above.
ApiResponse answer(Result<Json> r, int ok_status = 200);

ApiResponse route(const ApiRequest& req, ApiContext& ctx);

// Per resource (routes_<resource>.cc): nullopt when the path is not theirs.
std::optional<ApiResponse> routeSystem(const ApiRequest& req, ApiContext& ctx);
std::optional<ApiResponse> routeSessions(const ApiRequest& req, ApiContext& ctx);
std::optional<ApiResponse> routeCommands(const ApiRequest& req, ApiContext& ctx);
std::optional<ApiResponse> routeFiles(const ApiRequest& req, ApiContext& ctx);
std::optional<ApiResponse> routeCredentials(const ApiRequest& req, ApiContext& ctx);
std::optional<ApiResponse> routeProfiles(const ApiRequest& req, ApiContext& ctx);
std::optional<ApiResponse> routeEvents(const ApiRequest& req, ApiContext& ctx);

// The body as a JSON value, or the 400 to answer; an empty body is {} only when allowed.
Result<Json> jsonBody(const ApiRequest& req);

}  // namespace corral::daemon
