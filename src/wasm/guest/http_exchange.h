// SPDX-License-Identifier: Apache-2.0
// One corral_http request and its response: an HTTP/1.1 exchange with the egress proxy over
// one loopback connection (Connection: close, one request per connection, as the proxy's v1).
// Results are WASI errnos (wasi_host.h), the guest's vocabulary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/unique_fd.h"
#include "wasm/guest/http_host.h"
#include "wasm/guest/tls_client.h"

namespace corral::wasm::guest {

struct HttpRequest {
  std::string method;   // an HTTP token, 1 to 32 bytes
  std::string url;      // absolute http:// or https:// URL, visible ASCII, no fragment
  std::string headers;  // "Name: value" lines separated by "\n" (a "\r" before it is allowed)
  std::string lease;    // "" or a --credential name
  int64_t body_len = 0;  // bytes of body to come; -1: unknown (sent chunked)
};

// The request head to send, or an errno (INVAL for a malformed request, NOTCAPABLE for a
// lease this run does not have). *tunnel: "" for a request the proxy forwards, or for an
// https:// request without a lease the "host:port" to CONNECT to, inside which the head goes
// over TLS to *tls_host.
uint16_t requestHead(const HttpConfig& config, const HttpRequest& req, std::string* head, std::string* tunnel = nullptr,
                     std::string* tls_host = nullptr);

class HttpExchange {
 public:
  // Connects to the proxy and sends the head.
  static uint16_t open(const HttpConfig& config, const HttpRequest& req, std::unique_ptr<HttpExchange>* out);

  uint16_t writeBody(const uint8_t* data, size_t len);
  // Ends the request body (all declared bytes must have been written) and reads the response
  // head. NOTCAPABLE when the egress proxy refused the request; the refusal is the response.
  uint16_t openResponse();
  // Body bytes, de-chunked; *got = 0 at the end.
  uint16_t readBody(uint8_t* data, size_t len, size_t* got);

  int status() const { return status_; }
  const std::string& responseHeaders() const { return response_headers_; }
  bool responseOpen() const { return state_ != State::kRequest; }

 private:
  enum class State { kRequest, kResponse };
  enum class Framing { kNone, kLength, kChunked, kUntilClose };
  enum class Chunk { kSize, kData, kDataEnd, kTrailers, kDone };

  explicit HttpExchange(UniqueFd sock) : sock_(std::move(sock)) {}
  // CONNECT through the proxy, then TLS. A refused tunnel leaves the refusal in in_ and
  // tunnel_refused_ set: the exchange goes on, and its response is that refusal.
  uint16_t openTunnel(const std::string& target, const std::string& host, const std::string& ca_file);
  uint16_t sendAll(const char* data, size_t len);
  bool fill();  // more bytes into in_; false at end of stream or on error
  uint16_t readLine(std::string* line);  // one CRLF line of at most 4 KiB from in_
  uint16_t parseHead(const std::string& head);
  uint16_t readChunked(uint8_t* data, size_t len, size_t* got);

  UniqueFd sock_;
  std::unique_ptr<TlsClient> tls_;  // https:// without a lease: the session inside the tunnel
  bool tunnel_refused_ = false;
  State state_ = State::kRequest;
  bool head_method_ = false;
  int64_t body_left_ = 0;  // declared body bytes still to write; -1: chunked
  std::string in_;         // received, not yet consumed
  int status_ = 0;
  std::string response_headers_;
  Framing framing_ = Framing::kNone;
  uint64_t left_ = 0;  // kLength: bytes to come; kChunked: of the current chunk
  Chunk chunk_ = Chunk::kSize;
  bool eof_ = false;
};

}  // namespace corral::wasm::guest
