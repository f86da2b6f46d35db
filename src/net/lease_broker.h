// SPDX-License-Identifier: Apache-2.0
// The proxy's view of the loaded credential leases: table, TLS client, redaction patterns and
// placeholder rules, built once and shared by every connection that may use them.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "net/lease_spec.h"
#include "net/lease_table.h"
#include "net/placeholder.h"
#include "net/redactor.h"
#include "net/tls_upstream.h"

namespace corral::net {

class LeaseBroker {
 public:
  // Loads every secret through env (LeaseTable::load) and the TLS trust store (TlsOptions:
  // "" = the system store). Errors are one line and never hold a secret.
  static Result<std::shared_ptr<LeaseBroker>> create(std::span<const LeaseSpec> specs, const EnvLookup& env,
                                                     const TlsOptions& tls, const RandomFill& random = systemRandom,
                                                     MonotonicClock clock = systemMonotonicNs);
  LeaseBroker(const LeaseBroker&) = delete;
  LeaseBroker& operator=(const LeaseBroker&) = delete;

  const Lease* find(std::string_view name) const { return table_.find(name); }
  // Thread-safe (a mutex per lease): called from the proxy thread and its lease workers.
  std::optional<std::string> chargeRequest(std::string_view name) { return table_.chargeRequest(name); }
  std::optional<std::string> chargeBytes(std::string_view name, uint64_t bytes) { return table_.chargeBytes(name, bytes); }
  LeaseUsage usage(std::string_view name) const { return table_.usage(name); }

  // "ENVVAR=placeholder" for each lease: what the sandbox's environment gets.
  std::vector<std::string> sandboxEnvironment() const { return table_.sandboxEnvironment(); }
  const TlsClientContext& tls() const { return tls_; }
  // What responses are redacted with: every lease's value now (a connection keeps the set it
  // began with).
  std::shared_ptr<const RedactionPatterns> patterns() const {
    std::lock_guard lock(mu_);
    return patterns_;
  }
  // A credential rotation reaching this proxy: lease `name` injects `value` from the next
  // request on (both modes), and responses are redacted of it.
  Result<void> rotate(std::string_view name, Secret value);
  std::span<const PlaceholderRule> placeholderRules() const { return rules_; }
  std::vector<std::string> placeholders() const;  // in placeholderRules() order

 private:
  LeaseBroker(LeaseTable table, TlsClientContext tls);
  std::shared_ptr<const RedactionPatterns> buildPatterns() const;
  // Invariant: table_ never moves after construction; rules_ point at its secrets.
  LeaseTable table_;
  TlsClientContext tls_;
  mutable std::mutex mu_;  // patterns_, and one rotation at a time
  std::shared_ptr<const RedactionPatterns> patterns_;
  std::vector<PlaceholderRule> rules_;  // point at the leases' cells: a rotation needs no rebuild
};

}  // namespace corral::net
