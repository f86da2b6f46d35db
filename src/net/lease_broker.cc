// SPDX-License-Identifier: Apache-2.0
// LeaseBroker: loads the leases and derives what the proxy needs from them, once.
#include "net/lease_broker.h"

namespace corral::net {

LeaseBroker::LeaseBroker(LeaseTable table, TlsClientContext tls) : table_(std::move(table)), tls_(std::move(tls)) {
  patterns_ = buildPatterns();
  rules_ = table_.placeholderRules();
}

std::shared_ptr<const RedactionPatterns> LeaseBroker::buildPatterns() const {
  // The targets are views into the snapshots held here; RedactionPatterns copies what it
  // derives from them.
  std::vector<std::shared_ptr<const Secret>> hold;
  std::vector<RedactTarget> targets = table_.redactTargets(&hold);
  return std::make_shared<const RedactionPatterns>(targets);
}

Result<void> LeaseBroker::rotate(std::string_view name, Secret value) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(table_.rotate(name, std::move(value)));
  patterns_ = buildPatterns();
  return {};
}

Result<std::shared_ptr<LeaseBroker>> LeaseBroker::create(std::span<const LeaseSpec> specs, const EnvLookup& env,
                                                         const TlsOptions& tls, const RandomFill& random,
                                                         MonotonicClock clock) {
  ASSIGN_OR_RETURN(LeaseTable table, LeaseTable::load(specs, env, random, std::move(clock)));
  ASSIGN_OR_RETURN(TlsClientContext ctx, TlsClientContext::create(tls));
  return std::shared_ptr<LeaseBroker>(new LeaseBroker(std::move(table), std::move(ctx)));
}

std::vector<std::string> LeaseBroker::placeholders() const {
  std::vector<std::string> out;
  for (const PlaceholderRule& r : rules_) out.push_back(r.placeholder);
  return out;
}

}  // namespace corral::net
