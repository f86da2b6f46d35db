// SPDX-License-Identifier: Apache-2.0
// The shim's egress proxy: grants and leases from the session's spec, usage counted per lease.
#include "daemon/shim_egress.h"

#include <chrono>

#include "net/lease_spec.h"
#include "policy/egress_grant.h"
#include "policy/egress_internal.h"

namespace corral::daemon {
namespace {

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

Result<std::unique_ptr<ShimEgress>> ShimEgress::start(const std::string& session_id, const SessionSpec& spec, const Json* leases,
                                                      UniqueFd proxy_end, UniqueFd agent_listener) {
  std::unique_ptr<ShimEgress> e(new ShimEgress());
  net::EgressConfig config;
  config.tag = "session-" + session_id;
  for (const std::string& g : spec.allow) {
    ASSIGN_OR_RETURN(auto grant, policy::egress::parseGrant(g));
    config.grants.push_back(grant);
  }
  for (const std::string& c : spec.allow_internal) {
    ASSIGN_OR_RETURN(auto cidr, policy::egress::parseCidr(c));
    config.internal.push_back(cidr);
  }
  // The values, by the variable the lease table asks for; wiped once the table holds them.
  auto values = std::make_shared<std::map<std::string, Secret>>();
  if (leases) {
    if (!leases->is_array()) return Error(Errc::kInvalidArgument, "shim config: leases is not a list");
    for (const Json& l : *leases) {
      ASSIGN_OR_RETURN(Fields f, Fields::of(l, "shim config lease", {"name", "env", "host", "header", "format", "value"}));
      std::string got[6];
      const char* keys[6] = {"name", "env", "host", "header", "format", "value"};
      for (int i = 0; i < 6; ++i) {
        ASSIGN_OR_RETURN(auto v, f.string(keys[i], 8192));
        if (!v) return Error(Errc::kInvalidArgument, std::string("shim config lease: no ") + keys[i]);
        got[i] = std::move(*v);
      }
      if (got[3].empty()) {  // the ssh-key record (credentials.h, Credentials::lease)
        if (!spec.ssh_key || *spec.ssh_key != got[0] || config.ssh_key)
          return Error(Errc::kInvalidArgument, "shim config lease: an ssh key the spec does not name");
        config.ssh_key = std::make_shared<Secret>(std::move(got[5]));
        config.ssh_key_path = "record " + got[0];  // names it in errors only
        e->ssh_key_name_ = got[0];
        continue;
      }
      ASSIGN_OR_RETURN(auto lease, net::leaseFromFields(got[0], got[1], got[2], got[3], got[4]));
      config.leases.push_back(std::move(lease));
      values->emplace(got[1], Secret(std::move(got[5])));
    }
  }
  if (spec.ssh_key && !config.ssh_key) return Error(Errc::kInvalidArgument, "shim config: the ssh key record's value is missing");
  if (config.ssh_key) {
    if (!agent_listener.valid()) return Error(Errc::kInvalidArgument, "shim config: no ssh agent socket");
    config.ssh_agent_listener = std::move(agent_listener);
  }
  config.env_lookup = [values](std::string_view env) -> std::optional<std::string> {
    auto it = values->find(std::string(env));
    if (it == values->end()) return std::nullopt;
    return std::string(it->second.revealForInjection());
  };
  ShimEgress* self = e.get();
  config.on_event = [self](const net::ConnectionEvent& ev) {
    (ev.decision == "allow" ? self->allowed_ : self->refused_)++;
    if (ev.kind == "ssh-agent" && ev.method == "sign-request" && !self->ssh_key_name_.empty()) {
      // A signature is the ssh-key record's use (counted like a header injected); ids and
      // fingerprints only are in the event (the agent logs each one to shim.log).
      std::lock_guard lock(self->mu_);
      Use& u = self->uses_[self->ssh_key_name_];
      if (ev.decision == "allow") {
        ++u.uses;
        u.last_used_ms = nowMs();
      } else {
        ++u.refused;
      }
    }
    // The authority decided (or, refused before that, as written: printable and bounded, or
    // its hash); the rule is the refusal's id. Nothing of the request's headers or target path.
    Json d = {{"kind", ev.kind}, {"method", ev.method}, {"host", ev.destination.empty() ? ev.requested : ev.destination},
              {"decision", ev.decision}, {"rule", ev.rule}, {"status", ev.status}};
    std::lock_guard lock(self->mu_);
    d["seq"] = ++self->seq_;
    self->recent_.push_back(std::move(d));
    if (self->recent_.size() > kRecentDecisions) self->recent_.pop_front();
  };
  config.on_lease_event = [self](const net::LeaseEvent& ev) {
    std::lock_guard lock(self->mu_);
    Use& u = self->uses_[ev.lease];
    // A use is a request the credential went out with; a refusal (budget, unknown, TLS) is not.
    if (ev.decision == "allow" && ev.rule == "allowed") {
      ++u.uses;
      u.last_used_ms = nowMs();
    } else if (ev.decision != "allow") {
      ++u.refused;
    }
  };
  auto proxy = net::SandboxEgress::start(std::move(config));
  values->clear();  // Secrets wipe themselves: the lease table holds the only copies now
  if (!proxy) return proxy.error();
  e->proxy_ = std::move(*proxy);
  e->proxy_->adopt(std::move(proxy_end));
  return e;
}

Result<void> ShimEgress::rotate(const std::string& name, Secret value) {
  if (!ssh_key_name_.empty() && name == ssh_key_name_) {
    ASSIGN_OR_RETURN(std::string fp, proxy_->rotateSshKey(value.revealForInjection()));
    (void)fp;
    return {};
  }
  return proxy_->rotateLease(name, std::move(value));
}

std::vector<std::pair<std::string, std::string>> ShimEgress::environment() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& kv : proxy_->sandboxEnvironment()) {
    const size_t eq = kv.find('=');
    out.emplace_back(kv.substr(0, eq), eq == std::string::npos ? std::string() : kv.substr(eq + 1));
  }
  return out;
}

Json ShimEgress::usage() const {
  std::lock_guard lock(mu_);
  Json out = Json::array();
  for (const auto& [name, u] : uses_)
    out.push_back({{"name", name}, {"uses", u.uses}, {"refused", u.refused}, {"last_used_ms", u.last_used_ms}});
  return out;
}

Json ShimEgress::decisions() const {
  std::lock_guard lock(mu_);
  Json recent = Json::array();
  for (const Json& d : recent_) recent.push_back(d);
  return {{"allowed", allowed_.load()}, {"refused", refused_.load()}, {"recent", recent}};
}

}  // namespace corral::daemon
