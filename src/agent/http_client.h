// SPDX-License-Identifier: Apache-2.0
// The providers' HTTP: one libcurl easy handle per request, locked down so that neither the
// environment (proxy variables) nor the server (redirects, other protocols) can steer it.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/conversation.h"
#include "agent/provider.h"
#include "base/result.h"
#include "base/secret.h"

namespace corral::agent {

// A provider's base URL, checked: http or https, a host, no user:password@, no query or
// fragment. base has no trailing '/', so base + "/chat/completions" is the request URL.
struct Endpoint {
  std::string base;
  std::string host;  // host[:port], what error messages name
};
Result<Endpoint> parseEndpoint(std::string_view url);

struct HttpRequest {
  std::string method = "POST";  // "GET" or "POST"
  std::string url;
  std::string host;             // for error messages (Endpoint::host)
  std::vector<std::string> headers;  // "Name: value"; never secret
  // The credential header, built as secret_header_prefix + key only inside the request, e.g.
  // "Authorization: Bearer " or "x-api-key: ". Not sent when secret is null.
  std::string secret_header_prefix;
  const Secret* secret = nullptr;
  std::string body;             // POST only
  std::chrono::milliseconds timeout{60000};          // the whole transfer
  std::chrono::milliseconds connect_timeout{10000};
  uint64_t max_response_bytes = 8 << 20;
  std::string ca_bundle;        // empty: the system trust store
};

struct HttpResponse {
  long status = 0;
  std::string body;
};

// One attempt, no redirects followed, no proxy. Errors name request.host (and the HTTP
// status), never headers or bodies:
//   kIo              connect failure, timeout, transfer error, HTTP 408, 429 or 5xx
//   kRefused         any other non-2xx status (3xx included: redirects are not followed),
//                    TLS verification failure; a retry would not help
//   kInvalidArgument body larger than max_response_bytes, a secret with a control byte
Result<HttpResponse> httpSend(const HttpRequest& request);

// Shared by the network providers: a request for path under endpoint with the config's
// timeouts and size cap (connect timeout: the smaller of 10 s and the call timeout).
HttpRequest providerRequest(const ProviderConfig& config, const Endpoint& endpoint, std::string_view path);
// What every provider records of a response: response_bytes and response_sha256 of body.
void stampResponse(ModelReply& reply, std::string_view body);

}  // namespace corral::agent
