// SPDX-License-Identifier: Apache-2.0
// LeaseBroker: loads the leases and derives what the proxy needs from them, once.
#include "net/lease_broker.h"

namespace corral::net {

LeaseBroker::LeaseBroker(LeaseTable table, TlsClientContext tls) : table_(std::move(table)), tls_(std::move(tls)) {
  // The targets are views into table_; RedactionPatterns copies what it derives from them.
  std::vector<RedactTarget> targets = table_.redactTargets();
  patterns_ = std::make_shared<const RedactionPatterns>(targets);
  rules_ = table_.placeholderRules();
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
