// SPDX-License-Identifier: Apache-2.0
// One proxy per run; each sandbox gets its own SOCK_SEQPACKET channel to it.
#include "net/sandbox_egress.h"

#include <sys/socket.h>

#include <algorithm>
#include <cmath>

#include "net/lease_broker.h"

namespace corral::net {

Result<std::unique_ptr<SandboxEgress>> SandboxEgress::start(EgressConfig config) {
  auto policy = std::make_shared<ClientPolicy>();
  policy->tag = config.tag;
  policy->grants = config.grants;
  policy->internal = config.internal;
  policy->self_authority = "127.0.0.1:" + std::to_string(config.sandbox_port);
  // Secrets are loaded before the proxy starts: a missing variable refuses the run.
  if (!config.leases.empty()) {
    ASSIGN_OR_RETURN(policy->leases, LeaseBroker::create(config.leases, config.env_lookup, config.tls, config.placeholder_random));
  }
  ProxyOptions options;
  options.on_event = config.on_event;
  options.on_lease_event = config.on_lease_event;
  ASSIGN_OR_RETURN(std::unique_ptr<ProxyServer> server, ProxyServer::start(std::move(options)));
  return std::unique_ptr<SandboxEgress>(new SandboxEgress(std::move(config), std::move(server), std::move(policy)));
}

SandboxEgress::~SandboxEgress() = default;

Result<UniqueFd> SandboxEgress::attach() {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return sysError("egress channel socketpair");
  UniqueFd sandbox_end(pair[0]), proxy_end(pair[1]);
  adopt(std::move(proxy_end));
  return sandbox_end;
}

void SandboxEgress::adopt(UniqueFd proxy_end) { server_->adoptFdChannel(std::move(proxy_end), policy_); }

std::vector<std::string> SandboxEgress::sandboxEnvironment() const {
  std::vector<std::string> env = policy::egress::proxyEnvironment(config_.sandbox_port);
  if (policy_->leases)
    for (std::string& kv : policy_->leases->sandboxEnvironment()) env.push_back(std::move(kv));
  return env;
}

nlohmann::ordered_json eventJson(const ConnectionEvent& e) {
  nlohmann::ordered_json j = {{"tag", e.tag},
          {"kind", e.kind},
          {"method", e.method},
          {"requested", e.requested},
          {"destination", e.destination},
          {"resolved", e.resolved},
          {"decision", e.decision},
          {"rule", e.rule},
          {"status", e.status},
          {"bytes_up", e.bytes_up},
          {"bytes_down", e.bytes_down},
          // Integer microseconds: the trace refuses floating-point numbers.
          {"duration_us", static_cast<uint64_t>(std::llround(std::max(0.0, e.duration_ms) * 1000))},
          {"lease", e.lease},
          {"suspects", e.suspects}};
  // Only when a CIDR admitted the address: records without one keep their earlier shape.
  if (!e.internal.empty()) j["internal"] = e.internal;
  return j;
}

nlohmann::ordered_json leaseEventJson(const LeaseEvent& e) {
  nlohmann::ordered_json suspects = nlohmann::ordered_json::array();
  for (const LeaseSuspect& s : e.suspects) suspects.push_back({{"place", s.place}, {"header", s.header}});
  return {{"tag", e.tag},
          {"lease", e.lease},
          {"mode", e.mode},
          {"method", e.method},
          {"host", e.host},
          {"port", e.port},
          {"path_sha256", e.path_sha256},
          {"status", e.status},
          {"bytes_up", e.bytes_up},
          {"bytes_down", e.bytes_down},
          {"decision", e.decision},
          {"rule", e.rule},
          {"refused", e.refused},
          {"redactions", e.redactions},
          {"suspects", suspects}};
}

}  // namespace corral::net
