// SPDX-License-Identifier: Apache-2.0
// The proxy's view of the loaded credential leases: table, TLS client, redaction patterns and
// placeholder rules, built once and shared by every connection that may use them.
#pragma once

#include <memory>
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
  const std::shared_ptr<const RedactionPatterns>& patterns() const { return patterns_; }
  std::span<const PlaceholderRule> placeholderRules() const { return rules_; }
  std::vector<std::string> placeholders() const;  // in placeholderRules() order

 private:
  LeaseBroker(LeaseTable table, TlsClientContext tls);
  // Invariant: table_ never moves after construction; rules_ point at its secrets.
  LeaseTable table_;
  TlsClientContext tls_;
  std::shared_ptr<const RedactionPatterns> patterns_;
  std::vector<PlaceholderRule> rules_;
};

}  // namespace corral::net
