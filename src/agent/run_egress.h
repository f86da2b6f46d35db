// SPDX-License-Identifier: Apache-2.0
// The run's egress: with network.allow or credentials in the manifest, one egress proxy for
// the whole run (net::SandboxEgress), a fresh channel for each `run` tool call, and every
// connection and lease use written to the trace from the run's own thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/trace.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "net/lease_spec.h"
#include "net/sandbox_egress.h"
#include "policy/manifest.h"

namespace corral::agent {

// The manifest's credentials as lease specs, checked against its env (no variable given
// twice, none corral sets itself). Errors start "manifest: credentials..." and never hold a
// secret (there is none yet: only variable names).
Result<std::vector<net::LeaseSpec>> manifestLeases(const policy::Manifest& m);

class RunEgress {
 public:
  // nullptr when the manifest has neither grants nor credentials (loopback only). Reads each
  // credential's secret from corral's environment now: a missing one refuses the run.
  static Result<std::unique_ptr<RunEgress>> start(const policy::Manifest& m, const std::string& run_id);

  Result<UniqueFd> attach() { return proxy_->attach(); }
  std::vector<std::string> sandboxEnvironment() const { return proxy_->sandboxEnvironment(); }
  // Appends the events that arrived since the last call: "egress" entries (one per request
  // or tunnel) and "lease" entries (one per lease use).
  Result<void> flush(audit::TraceWriter& trace);
  // Stops the proxy (open connections are closed and report); flush() afterwards.
  void stop() { proxy_.reset(); }

 private:
  RunEgress() = default;
  std::mutex mu_;
  std::vector<std::pair<std::string, nlohmann::json>> pending_;  // type, data
  std::unique_ptr<net::SandboxEgress> proxy_;
};

}  // namespace corral::agent
