// SPDX-License-Identifier: Apache-2.0
// Blocking TLS client toward a credential's upstream: verified certificate, TLS 1.2+, timeouts.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"
#include "policy/ip_ranges.h"

struct ssl_st;
struct ssl_ctx_st;

namespace corral::net {

struct TlsOptions {
  std::string ca_bundle_path;  // PEM file of trusted CAs; "" uses the system trust store
  std::chrono::milliseconds connect_timeout{10'000};  // TCP connect plus handshake
  std::chrono::milliseconds io_timeout{30'000};       // each read or write call
};

// The client configuration, trust store loaded once: peer verification on, TLS >= 1.2,
// renegotiation off. Shared by every stream; immutable once loaded.
class TlsClientContext {
 public:
  // With ca_bundle_path, the bundle is loaded here and a bad one is the error. The system
  // store instead loads on a thread of its own, at low priority, while the caller goes on:
  // OpenSSL's start and the default bundle take 25-40 ms here, several times a whole
  // sandboxed launch, and a lease run's command should not wait for them before it starts.
  // The first handshake waits for the load (get()).
  static Result<TlsClientContext> create(const TlsOptions& options);
  const TlsOptions& options() const;
  // The loaded context; waits while the system store is still loading. An error when it could
  // not be loaded (every handshake then fails with it).
  Result<ssl_ctx_st*> get() const;

  struct State;  // shared with the loader thread (tls_upstream.cc)

 private:
  explicit TlsClientContext(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

// One verified TLS connection. host_for_verify is the grant's canonical host text: a name
// is sent as SNI and checked against the certificate's DNS names (SSL_set1_host, no partial
// wildcards); an IPv4 or IPv6 literal (no brackets) is checked against its IP addresses
// and no SNI is sent. Any verification failure refuses the connection.
// Writes go through write(2): the process must ignore SIGPIPE (the proxy does).
class TlsStream {
 public:
  static Result<TlsStream> connect(const TlsClientContext& ctx, const policy::egress::IpAddress& address,
                                   uint16_t port, const std::string& host_for_verify);
  // Over a TCP connection the caller already made (any blocking mode; it is made non-blocking).
  static Result<TlsStream> handshake(const TlsClientContext& ctx, UniqueFd connected,
                                     const std::string& host_for_verify);

  TlsStream(TlsStream&&) = default;
  TlsStream& operator=(TlsStream&&) = default;
  ~TlsStream() = default;

  // Up to buf.size() bytes; 0 once the peer sent close_notify. A close without close_notify
  // is an error (kIo): a close-delimited body may have been cut short.
  Result<size_t> read(std::span<char> buf);
  Result<void> writeAll(std::string_view data);
  // Sends close_notify; does not wait for the peer's.
  Result<void> shutdown();

  int fd() const { return fd_.get(); }
  std::string protocol() const;  // "TLSv1.3"

 private:
  struct Free {
    void operator()(ssl_st* ssl) const;
  };
  TlsStream(UniqueFd fd, std::unique_ptr<ssl_st, Free> ssl, std::chrono::milliseconds io_timeout)
      : fd_(std::move(fd)), ssl_(std::move(ssl)), io_timeout_(io_timeout) {}

  // Declared first so it is destroyed last: SSL_free may still touch the fd.
  UniqueFd fd_;
  std::unique_ptr<ssl_st, Free> ssl_;
  std::chrono::milliseconds io_timeout_;
};

}  // namespace corral::net
