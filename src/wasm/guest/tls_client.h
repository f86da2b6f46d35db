// SPDX-License-Identifier: Apache-2.0
// TLS for corral_http's https:// requests without a lease, spoken by corral-wasm-guest inside
// the tunnel the egress proxy opened (CONNECT). OpenSSL is loaded with dlopen on the first such
// request only: a guest that never asks for HTTPS does not pay libssl's load at its start.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

namespace corral::wasm::guest {

class TlsClient {
 public:
  // Handshake over fd. host: the URL's host; a name is sent as SNI and checked against the
  // certificate, an IP literal (brackets stripped) is checked as an address and sends no SNI.
  // ca_file: "" for the system's CAs. Returns a WASI errno: NOTSUP without OpenSSL, IO for a
  // failed handshake or an unverified certificate, NOTCAPABLE when the proxy refused the
  // tunnel with a TLS access_denied alert (its SNI rule).
  static uint16_t connect(int fd, const std::string& host, const std::string& ca_file, std::unique_ptr<TlsClient>* out);
  ~TlsClient();
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  // As send(2) and read(2): bytes moved, or -1; 0 from read at the peer's close.
  ssize_t write(const char* data, size_t len);
  ssize_t read(char* data, size_t len);

 private:
  TlsClient(void* ctx, void* ssl) : ctx_(ctx), ssl_(ssl) {}
  void* ctx_;
  void* ssl_;
};

}  // namespace corral::wasm::guest
