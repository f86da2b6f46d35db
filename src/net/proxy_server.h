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
#include "policy/egress_internal.h"
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
  std::string internal;     // the --allow-internal CIDR that admitted `resolved`, "" when none
  std::string parent;       // the parent proxy (host:port) it went through, "" when dialled directly
  std::string decision;     // "allow" or "refuse"
  std::string rule;         // "allowed" or the refusal's rule id (X-Corral-Denied)
  int status = 0;           // HTTP status sent or relayed (200 for an opened tunnel)
  uint64_t bytes_up = 0;    // bytes written to the upstream (request head and body, or tunnel)
  uint64_t bytes_down = 0;  // bytes written to the client
  double duration_ms = 0;
  std::string lease;        // leases used or named, comma-separated ("" when none)
  uint32_t suspects = 0;    // placeholders seen where they are not swapped (placeholder mode)
  // kind "ssh-agent" (ssh_agent.h) only: the agent key's and the server's host key's
  // fingerprints ("SHA256:..."), never key material.
  std::string ssh_key;
  std::string host_key;
};

// Where a placeholder was seen but not swapped (placeholder.h's SuspectPlace, by name).
struct LeaseSuspect {
  std::string place;   // "header-other-destination", "header-other-spelling", "header-name", "target", "body"
  std::string header;  // the header's name for header places, "" otherwise
};

// One use of one lease (docs/credential-leases.md, "Trace"). Never holds the secret, the
// placeholder, a header value, a body or a path in clear.
struct LeaseEvent {
  std::string tag;          // the ClientPolicy tag
  std::string lease;        // the lease's name (escaped if the client named an unknown one)
  std::string mode;         // "broker" or "placeholder"
  std::string method;
  std::string host;         // the lease's canonical upstream host
  uint16_t port = 0;
  std::string path_sha256;  // sha256 hex of the origin-form path and query sent upstream
  int status = 0;           // status relayed or sent
  uint64_t bytes_up = 0;    // toward the upstream
  uint64_t bytes_down = 0;  // toward the client
  std::string decision;     // "allow" or "refuse"
  std::string rule;         // "allowed", "lease-limit", "lease-unknown", "lease-tls-refused", ...
  std::string refused;      // the 429 reason, "" otherwise
  uint64_t redactions = 0;  // redaction markers written into the response
  std::vector<LeaseSuspect> suspects;
};

class LeaseBroker;
class OpenTunnels;
struct UpstreamProxy;

struct ClientPolicy {
  std::string tag;
  std::vector<policy::egress::Grant> grants;
  // --allow-internal: the private CIDRs a granted name may resolve into (egress_internal.h).
  std::vector<policy::egress::Cidr> internal;
  // Credential leases this client may use; null: none (no /lease/ URLs, no placeholder swap).
  std::shared_ptr<LeaseBroker> leases;
  // The authority the client reaches the proxy at ("127.0.0.1:3128"): an absolute-form
  // `http://<self_authority>/lease/...` (what clients with HTTP_PROXY send) is a lease
  // request, and so is the same port spelled `localhost:<port>`. "" accepts origin-form only.
  std::string self_authority;
  // --upstream-proxy: allowed requests and tunnels go through this parent (after corral's
  // decision, to the vetted address), unless its NO_PROXY exempts the destination. Null:
  // dialled directly. Broker-mode lease requests always dial directly.
  std::shared_ptr<const UpstreamProxy> upstream;
  // --ssh-key: the tcp-grant tunnels dialled directly are registered here while open, for the
  // SSH agent to bind signatures to (open_tunnels.h). Null: not tracked.
  std::shared_ptr<OpenTunnels> tunnels;
};

using Resolver = std::function<Result<std::vector<policy::egress::IpAddress>>(const std::string& host)>;

struct ProxyOptions {
  std::function<void(const ConnectionEvent&)> on_event;  // called on the proxy thread
  std::function<void(const LeaseEvent&)> on_lease_event;  // called on the proxy thread
  std::chrono::milliseconds header_timeout{10000};       // to receive a request head (slowloris)
  std::chrono::milliseconds connect_timeout{10000};      // resolve plus connect
  std::chrono::milliseconds idle_timeout{300000};        // no byte either way
  size_t max_connections = 4096;                          // beyond: 503
  // Empty: getaddrinfo through Asio's asynchronous resolver. Tests inject a function, which
  // is called on the proxy thread and must not block.
  Resolver resolve;
  // Broker-mode requests run their blocking TLS exchange on worker threads, started on
  // demand; beyond this many at once, lease requests wait their turn.
  size_t max_lease_workers = 64;
};

class ProxyServer {
 public:
  // Starts the io_context on its own thread. Sets SIGPIPE to SIG_IGN for the whole process:
  // the lease TLS client writes with write(2), and a closed upstream must be an error, not
  // a signal.
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
