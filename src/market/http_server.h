// SPDX-License-Identifier: Apache-2.0
// HttpServer: Boost.Beast HTTP/1.1 over TCP, optionally TLS, one thread per connection,
// with header, body and connection caps. Knows nothing of the market's routes.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/result.h"

namespace corral::market {

struct HttpRequest {
  std::string method;
  std::string target;  // path and query as sent
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string body;  // JSON
  std::map<std::string, std::string> headers;
};

struct HttpLimits {
  size_t header_bytes = size_t{8} * 1024;
  size_t body_bytes = size_t{1024} * 1024;
  int max_connections = 256;
  int idle_seconds = 30;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  // listen: "ADDR:PORT" (port 0 picks one). TLS when both cert and key are set.
  static Result<std::unique_ptr<HttpServer>> start(const std::string& listen, const std::string& tls_cert,
                                                   const std::string& tls_key, HttpLimits limits, Handler handler);
  virtual ~HttpServer() = default;
  virtual uint16_t port() const = 0;
  // Serves until stop() (from another thread or a signal handler's flag).
  virtual void run() = 0;
  virtual void stop() = 0;
};

}  // namespace corral::market
