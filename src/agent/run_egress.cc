// SPDX-License-Identifier: Apache-2.0
#include "agent/run_egress.h"

#include <algorithm>
#include <cstdlib>

#include "policy/egress_grant.h"

namespace corral::agent {
namespace {

bool setByCorral(std::string_view name) {
  const auto& proxy = policy::egress::kProxyEnvironmentNames;
  return std::find(std::begin(proxy), std::end(proxy), name) != std::end(proxy) || name == "PATH" ||
         name == "HOME" || name.starts_with("LD_");
}

}  // namespace

Result<std::vector<net::LeaseSpec>> manifestLeases(const policy::Manifest& m) {
  std::vector<net::LeaseSpec> out;
  for (const policy::CredentialSpec& c : m.credentials) {
    auto spec = net::leaseFromFields(c.name, c.env, c.url, c.header, c.format);
    if (!spec) return spec.error().wrap("manifest");
    const std::string where = "manifest: credentials '" + spec->name + "'";
    for (const net::LeaseSpec& other : out) {
      if (other.name == spec->name) return Error(Errc::kInvalidArgument, where + ": the name is used twice");
      if (other.env == spec->env)
        return Error(Errc::kInvalidArgument, where + ": variable " + spec->env + " already names credential " + other.name);
    }
    if (setByCorral(spec->env))
      return Error(Errc::kInvalidArgument, where + ": variable " + spec->env + " is set by corral inside the sandbox");
    for (const std::string& kv : m.env)
      if (std::string_view(kv).substr(0, kv.find('=')) == spec->env)
        return Error(Errc::kInvalidArgument, where + ": variable " + spec->env + " is also set in env");
    out.push_back(std::move(*spec));
  }
  return out;
}

Result<std::unique_ptr<RunEgress>> RunEgress::start(const policy::Manifest& m, const std::string& run_id) {
  if (m.network.allow.empty() && m.credentials.empty()) return std::unique_ptr<RunEgress>();
  ASSIGN_OR_RETURN(std::vector<net::LeaseSpec> leases, manifestLeases(m));
  auto grants = policy::egress::parseGrants(m.network.allow);  // canonical already: cannot fail
  if (!grants) return grants.error().wrap("manifest: network.allow");
  std::vector<policy::egress::Cidr> internal;
  for (const std::string& text : m.network.internal) {  // canonical already: cannot fail
    ASSIGN_OR_RETURN(policy::egress::Cidr cidr, policy::egress::parseCidr(text));
    internal.push_back(cidr);
  }
  std::unique_ptr<RunEgress> self(new RunEgress());
  RunEgress* raw = self.get();
  net::EgressConfig config;
  config.tag = run_id;
  config.grants = std::move(*grants);
  config.internal = std::move(internal);
  config.leases = std::move(leases);
  config.env_lookup = net::processEnvironment;
  // The trace writer is the run thread's: events wait here until flush().
  config.on_event = [raw](const net::ConnectionEvent& e) {
    nlohmann::json data = net::eventJson(e);
    data.erase("tag");  // the run id is in run_start
    std::lock_guard lock(raw->mu_);
    raw->pending_.emplace_back("egress", std::move(data));
  };
  config.on_lease_event = [raw](const net::LeaseEvent& e) {
    nlohmann::json data = net::leaseEventJson(e);
    data.erase("tag");
    std::lock_guard lock(raw->mu_);
    raw->pending_.emplace_back("lease", std::move(data));
  };
  ASSIGN_OR_RETURN(self->proxy_, net::SandboxEgress::start(std::move(config)));
  return self;
}

Result<void> RunEgress::flush(audit::TraceWriter& trace) {
  std::vector<std::pair<std::string, nlohmann::json>> batch;
  {
    std::lock_guard lock(mu_);
    batch.swap(pending_);
  }
  for (const auto& [type, data] : batch) RETURN_IF_ERROR(trace.append(type, data));
  return {};
}

}  // namespace corral::agent
