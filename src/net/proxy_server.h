// SPDX-License-Identifier: Apache-2.0
// The host-side egress proxy: plain-HTTP forward requests and CONNECT tunnels for many
// sandboxes, each request decided by src/policy/egress_decide.h. docs/egress-proxy.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "policy/egress_grant.h"
#include "policy/ip_ranges.h"

namespace corral::net {

// One request or tunnel, reported when it ends: the audit record of an egress attempt.
// Never holds a body, a path or a header value.
struct ConnectionEvent {
  std::string tag;          // the ClientPolicy tag: which sandbox/run
  std::string kind;         // "forward" or "connect"
  std::string method;       // "GET", "CONNECT", "" when the request line was unreadable
  std::string requested;    // the authority as written (printable, <= 256 bytes, else "sha256:<hex>")
  std::string destination;  // canonical host:port decided, "" when refused before that
  std::string resolved;     // ip:port dialled ("[::1]:443"), "" when none
  std::string decision;     // "allow" or "refuse"
  std::string rule;         // "allowed" or the refusal's rule id (X-Corral-Denied)
  int status = 0;           // HTTP status sent or relayed (200 for an opened tunnel)
  uint64_t bytes_up = 0;    // bytes written to the upstream (request head and body, or tunnel)
  uint64_t bytes_down = 0;  // bytes written to the client
  double duration_ms = 0;
};

struct ClientPolicy {
  std::string tag;
  std::vector<policy::egress::Grant> grants;
};

using Resolver = std::function<Result<std::vector<policy::egress::IpAddress>>(const std::string& host)>;

struct ProxyOptions {
  std::function<void(const ConnectionEvent&)> on_event;  // called on the proxy thread
  std::chrono::milliseconds header_timeout{10000};       // to receive a request head (slowloris)
  std::chrono::milliseconds connect_timeout{10000};      // resolve plus connect
  std::chrono::milliseconds idle_timeout{300000};        // no byte either way
  size_t max_connections = 4096;                          // beyond: 503
  // Empty: getaddrinfo through Asio's asynchronous resolver. Tests inject a function, which
  // is called on the proxy thread and must not block.
  Resolver resolve;
};

class ProxyServer {
 public:
  // Starts the io_context on its own thread.
  static Result<std::unique_ptr<ProxyServer>> start(ProxyOptions options);
  ~ProxyServer();  // closes every connection (each reports its event) and joins
  ProxyServer(const ProxyServer&) = delete;
  ProxyServer& operator=(const ProxyServer&) = delete;

  // Serves HTTP on one accepted client stream socket (TCP or UNIX).
  void adopt(UniqueFd client, std::shared_ptr<const ClientPolicy> policy);
  // Receives client sockets over a UNIX stream socket, one fd per message (SCM_RIGHTS, a
  // 1-byte payload), and adopts each, until EOF.
  void adoptFdChannel(UniqueFd unix_sock, std::shared_ptr<const ClientPolicy> policy);
  // A TCP listener whose clients all get `policy`; returns the bound port (port 0: any).
  Result<uint16_t> listen(const std::string& addr, uint16_t port, std::shared_ptr<const ClientPolicy> policy);
  // Live client connections (for tests and the bench); safe from any thread.
  size_t connectionCount() const;

  struct Impl;

 private:
  explicit ProxyServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace corral::net
