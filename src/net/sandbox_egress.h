// SPDX-License-Identifier: Apache-2.0
// The egress proxy as a sandbox sees it: one host-side ProxyServer per run, one fd channel
// per sandboxed command, and the environment that points the command's clients at it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "base/unique_fd.h"
#include "net/lease_spec.h"
#include "net/lease_table.h"
#include "net/proxy_server.h"
#include "net/ssh_agent.h"
#include "net/tls_upstream.h"
#include "net/upstream_proxy.h"
#include "policy/egress_grant.h"

namespace corral::net {

struct EgressConfig {
  std::string tag;                                      // run id: every event carries it
  std::vector<policy::egress::Grant> grants;            // empty: every request is refused
  std::vector<policy::egress::Cidr> internal;           // --allow-internal (egress_internal.h)
  // --upstream-proxy (upstream_proxy.h); start() resolves its name once. Null: none.
  std::shared_ptr<UpstreamProxy> upstream;
  uint16_t sandbox_port = 3128;                         // where init listens inside the sandbox
  std::function<void(const ConnectionEvent&)> on_event; // on the proxy thread
  // Credential leases (docs/credential-leases.md): each secret is read through env_lookup
  // (the operator's environment) at start; the sandbox only ever gets placeholders. A lease
  // does not grant its destination for plain forward requests: placeholder mode needs a
  // grant too, broker mode (/lease/NAME/...) does not.
  std::vector<LeaseSpec> leases;
  EnvLookup env_lookup;
  TlsOptions tls;                                       // toward lease upstreams
  std::function<void(const LeaseEvent&)> on_lease_event;  // on the proxy thread
  // Where each lease's placeholder comes from (16 bytes per lease, in order): a launcher that
  // fixed the sandbox's environment before the proxy started hands over the bytes it used.
  RandomFill placeholder_random = systemRandom;
  // --ssh-key (ssh_agent.h): the key file, read at start, and the listening socket the
  // sandbox's SSH_AUTH_SOCK names (ssh_agent_socket.h). Empty path: no agent.
  std::string ssh_key_path;
  UniqueFd ssh_agent_listener;
  // Or the key file's text (a daemon's ssh-key credential record): an agent runs when set,
  // ssh_key_path then only names it in errors. Wiped once the agent has parsed it.
  std::shared_ptr<Secret> ssh_key;
};

class SandboxEgress {
 public:
  static Result<std::unique_ptr<SandboxEgress>> start(EgressConfig config);
  // Stops the proxy: connections still open (a command's children are gone by then, but
  // an upstream may still be sending) are closed and report their events first.
  ~SandboxEgress();
  SandboxEgress(const SandboxEgress&) = delete;
  SandboxEgress& operator=(const SandboxEgress&) = delete;

  // A new channel for one sandbox: returns the sandbox's end (SandboxSpec::proxy.channel, a
  // UNIX SOCK_SEQPACKET socket); the proxy serves the other end until the sandbox is gone.
  Result<UniqueFd> attach();
  // The same with a channel made elsewhere: the proxy serves `proxy_end`.
  void adopt(UniqueFd proxy_end);

  // HTTP_PROXY, HTTPS_PROXY in both cases = http://127.0.0.1:<port>, ALL_PROXY =
  // socks5h://127.0.0.1:<port> (the same port speaks SOCKS5), and an empty
  // NO_PROXY/no_proxy: every client library that honours them goes through the proxy, and
  // nothing is exempt (there is nowhere else to go: the sandbox has loopback only). The names
  // are policy::egress::kProxyEnvironmentNames. Then one ENVVAR=placeholder per lease.
  std::vector<std::string> sandboxEnvironment() const;
  // A credential rotation: lease `name` injects `value` from the next request on
  // (LeaseBroker::rotate). An Error when there is no such lease or the value is refused.
  Result<void> rotateLease(std::string_view name, Secret value);
  // The agent's key replaced (ssh_agent.h, SshAgent::rotateKey); refused when no agent runs.
  Result<std::string> rotateSshKey(std::string_view text);

 private:
  SandboxEgress(EgressConfig config, std::unique_ptr<ProxyServer> server, std::shared_ptr<const ClientPolicy> policy,
                std::unique_ptr<SshAgent> agent)
      : config_(std::move(config)), server_(std::move(server)), policy_(std::move(policy)), agent_(std::move(agent)) {}
  EgressConfig config_;
  std::unique_ptr<ProxyServer> server_;
  std::shared_ptr<const ClientPolicy> policy_;
  std::unique_ptr<SshAgent> agent_;  // --ssh-key; stopped before the proxy
};

// An event as a JSON object (the exec report and the run trace use the same fields).
nlohmann::ordered_json eventJson(const ConnectionEvent& e);
nlohmann::ordered_json leaseEventJson(const LeaseEvent& e);

}  // namespace corral::net
