// SPDX-License-Identifier: Apache-2.0
// One proxy per run; each sandbox gets its own SOCK_SEQPACKET channel to it.
#include "net/sandbox_egress.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstring>

#include <algorithm>
#include <cmath>

#include "net/lease_broker.h"

namespace corral::net {
namespace {

// The parent's name is resolved once, at start, by the host's resolver: a parent that cannot
// be found refuses the run before anything runs, rather than every request later.
Result<void> resolveParent(UpstreamProxy& parent) {
  namespace eg = policy::egress;
  if (parent.host.kind != eg::HostKind::kName) {
    parent.addresses = {parent.host.ip};
    return {};
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(parent.host.text.c_str(), nullptr, &hints, &res); rc != 0)
    return Error(Errc::kInvalidArgument, "upstream proxy " + parent.text() + ": " + ::gai_strerror(rc));
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      const auto* b = reinterpret_cast<const uint8_t*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr);
      parent.addresses.push_back(eg::ipv4(b[0], b[1], b[2], b[3]));
    } else if (a->ai_family == AF_INET6) {
      std::array<uint8_t, 16> bytes{};
      std::memcpy(bytes.data(), &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, 16);
      parent.addresses.push_back(eg::ipv6(bytes));
    }
  }
  ::freeaddrinfo(res);
  if (parent.addresses.empty()) return Error(Errc::kInvalidArgument, "upstream proxy " + parent.text() + ": no address");
  return {};
}

}  // namespace

Result<std::unique_ptr<SandboxEgress>> SandboxEgress::start(EgressConfig config) {
  auto policy = std::make_shared<ClientPolicy>();
  policy->tag = config.tag;
  policy->grants = config.grants;
  policy->internal = config.internal;
  policy->self_authority = "127.0.0.1:" + std::to_string(config.sandbox_port);
  if (config.upstream) {
    RETURN_IF_ERROR(resolveParent(*config.upstream));
    policy->upstream = config.upstream;
  }
  // Secrets are loaded before the proxy starts: a missing variable refuses the run.
  if (!config.leases.empty()) {
    ASSIGN_OR_RETURN(policy->leases, LeaseBroker::create(config.leases, config.env_lookup, config.tls, config.placeholder_random));
  }
  // The key is read before the proxy starts too: an unusable one refuses the run.
  std::unique_ptr<SshAgent> agent;
  if (!config.ssh_key_path.empty() || config.ssh_key) {
    if (!config.ssh_agent_listener.valid()) return Error(Errc::kInvalidArgument, "--ssh-key: no agent socket");
    policy->tunnels = std::make_shared<OpenTunnels>();
    SshAgentConfig a;
    a.tag = config.tag;
    a.key_path = config.ssh_key_path;
    a.key_text = std::move(config.ssh_key);
    a.listener = std::move(config.ssh_agent_listener);
    a.tunnels = policy->tunnels;
    a.on_event = config.on_event;
    ASSIGN_OR_RETURN(agent, SshAgent::start(std::move(a)));
  }
  ProxyOptions options;
  options.on_event = config.on_event;
  options.on_lease_event = config.on_lease_event;
  ASSIGN_OR_RETURN(std::unique_ptr<ProxyServer> server, ProxyServer::start(std::move(options)));
  return std::unique_ptr<SandboxEgress>(
      new SandboxEgress(std::move(config), std::move(server), std::move(policy), std::move(agent)));
}

SandboxEgress::~SandboxEgress() {
  agent_.reset();  // its events come before the proxy's last ones, on a thread of its own
}

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
  if (!e.parent.empty()) j["upstream_proxy"] = e.parent;
  if (!e.ssh_key.empty()) j["ssh_key"] = e.ssh_key;
  if (!e.host_key.empty()) j["host_key"] = e.host_key;
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

Result<void> SandboxEgress::rotateLease(std::string_view name, Secret value) {
  if (!policy_->leases) return Error(Errc::kInvalidArgument, "no credential leases here");
  return policy_->leases->rotate(name, std::move(value));
}

Result<std::string> SandboxEgress::rotateSshKey(std::string_view text) {
  if (!agent_) return Error(Errc::kInvalidArgument, "no ssh agent here");
  return agent_->rotateKey(text);
}

}  // namespace corral::net
