// SPDX-License-Identifier: Apache-2.0
// A session's egress proxy (net::SandboxEgress), run by its shim for the session's life: the
// session's grants, and its credential leases, whose values the shim got from the daemon over
// its config pipe and which end with the shim (the session's end, or its loss).
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "daemon/json_fields.h"
#include "daemon/session_spec.h"
#include "net/sandbox_egress.h"

namespace corral::daemon {

class ShimEgress {
 public:
  // leases: the config's [{"name","env","host","header","format","value"}]. Every value is
  // loaded into the proxy's lease table (and the copies here wiped) before this returns.
  // A lease with an empty header is the session's ssh-key record (spec.ssh_key): its value is
  // the key file's text, which the proxy's ssh agent parses (and wipes) before this returns;
  // agent_listener is the socket the sandbox's SSH_AUTH_SOCK names (made before the clone).
  // proxy_end: the proxy's end of the sandbox's channel (the shim made the pair before the clone).
  static Result<std::unique_ptr<ShimEgress>> start(const std::string& session_id, const SessionSpec& spec, const Json* leases,
                                                   UniqueFd proxy_end, UniqueFd agent_listener = UniqueFd());
  // A credential rotation (the daemon's rotate_lease): lease `name` injects `value` from the
  // next request on; the old value is never injected again. For the ssh-key record, the agent
  // signs with the new key from the next request on.
  Result<void> rotate(const std::string& name, Secret value);
  // What every command's environment gets: the proxy variables and one placeholder per lease.
  std::vector<std::pair<std::string, std::string>> environment() const;
  // Per lease: {"name", "uses", "refused", "last_used_ms"} since the session began. For the
  // ssh-key record a use is a signature made, a refusal a sign request refused.
  Json usage() const;
  // Requests decided so far: {"allowed", "refused", "recent": [...]}: the counts, and the last
  // kRecentDecisions decisions one by one, {"seq", "kind", "method", "host", "decision", "rule",
  // "status"}, seq counting from 1 (the daemon sends each new one as an event). Hosts and
  // decisions only: no header, path or body is kept.
  Json decisions() const;
  static constexpr size_t kRecentDecisions = 256;

 private:
  struct Use {
    int64_t uses = 0, refused = 0, last_used_ms = 0;
  };
  ShimEgress() = default;
  mutable std::mutex mu_;
  std::map<std::string, Use> uses_;
  std::deque<Json> recent_;  // under mu_, at most kRecentDecisions
  int64_t seq_ = 0;          // under mu_
  std::atomic<int64_t> allowed_{0}, refused_{0};
  std::string ssh_key_name_;  // the ssh-key record the agent signs with; "" when none
  // Invariant: declared last, so destroyed first: its thread calls back into the members above
  // until it is joined.
  std::unique_ptr<net::SandboxEgress> proxy_;
};

}  // namespace corral::daemon
