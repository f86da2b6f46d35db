// SPDX-License-Identifier: Apache-2.0
// The CLI's client of the daemon's API: HTTP/1.1 over the UNIX socket (Boost.Beast).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"
#include "daemon/json_fields.h"
#include "daemon/paths.h"

namespace corral::daemon {

struct ApiResult {  // NOLINT(bugprone-exception-escape): false positive from the nlohmann::json member's special members
  int status = 0;
  Json body;
};

class ApiClient {
 public:
  // Finds the socket ($CORRAL_SOCKET, else the default). With no daemon there, the error
  // says where it looked and how to start one.
  static Result<ApiClient> connect();
  Result<ApiResult> request(const std::string& method, const std::string& target, const std::optional<Json>& body = std::nullopt);
  // GET target, a chunked NDJSON body: on_line for each line until it returns false or the body ends.
  Result<int> stream(const std::string& target, const std::function<bool(const Json&)>& on_line);
  // GET target: a 2xx body's bytes go to on_bytes as they arrive (false stops); any other
  // status's body (a JSON error, at most 64 KiB) comes back in the result.
  Result<ApiResult> download(const std::string& target, const std::function<bool(std::string_view)>& on_bytes);
  // PUT target with size bytes read from fd as the body, sent as they are read.
  Result<ApiResult> upload(const std::string& target, int fd, uint64_t size);
  // POST target with what fd holds as a chunked body, sent as it is read, until fd's end
  // (*input_ended) or until fd has had nothing for idle_ms (the body ends there, so the
  // server's read timeout never cuts a slow producer off: the caller posts again).
  Result<ApiResult> postStream(const std::string& target, int fd, int idle_ms, bool* input_ended);
  // GET target asking to upgrade to protocol: on 101, the connection and the bytes read past
  // the answer's head (*early); any other answer comes back as an Error with its message.
  Result<UniqueFd> upgrade(const std::string& target, const std::string& protocol, std::string* early);

 private:
  explicit ApiClient(SocketChoice where) : where_(std::move(where)) {}
  Result<int> open() const;  // a fresh connection (one per request: the CLI makes few)
  // GET target; the body's bytes, as they arrive, to on_bytes; the status.
  Result<int> getRaw(const std::string& target, const std::function<bool(int status, std::string_view)>& on_bytes);
  SocketChoice where_;
};

// The message of an API error body, or a generic one naming the status.
std::string apiErrorMessage(const ApiResult& r);

}  // namespace corral::daemon
