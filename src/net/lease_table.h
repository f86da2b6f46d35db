// SPDX-License-Identifier: Apache-2.0
// Loaded credential leases: secret, placeholder, destination and budgets, by lease name.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/secret.h"
#include "net/lease_spec.h"
#include "net/placeholder.h"
#include "net/redactor.h"
#include "net/secret_cell.h"

namespace corral::net {

inline constexpr size_t kMinSecretBytes = 8;     // shorter would redact ordinary text
inline constexpr size_t kMaxSecretBytes = 4096;  // it has to fit in one header line

// getenv on the operator's side; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
// Fills the span with unpredictable bytes (getrandom in production).
using RandomFill = std::function<Result<void>(std::span<uint8_t>)>;
// Monotonic nanoseconds (CLOCK_MONOTONIC in production).
using MonotonicClock = std::function<int64_t()>;

Result<void> systemRandom(std::span<uint8_t> out);
// getenv of this process (corral's own environment, the operator's side): an EnvLookup.
std::optional<std::string> processEnvironment(std::string_view name);
int64_t systemMonotonicNs();

class Lease {
 public:
  Lease(LeaseSpec spec, Secret secret, std::string placeholder)
      : spec_(std::move(spec)), secret_(std::make_shared<SecretCell>(std::move(secret))), placeholder_(std::move(placeholder)) {}

  const std::string& name() const { return spec_.name; }
  const LeaseSpec& spec() const { return spec_; }
  const policy::egress::Grant& grant() const { return spec_.grant; }
  const std::string& header() const { return spec_.header; }
  // "corral-lease-<name>-<32 hex>": random, never derived from the secret. It is what the
  // sandbox sees in spec().env instead of the secret.
  const std::string& placeholder() const { return placeholder_; }
  // The value now: LeaseTable::rotate replaces it while the proxy serves.
  const SecretCell& secret() const { return *secret_; }
  // The header value sent upstream: the format with "{}" replaced by the current secret.
  Secret injectedHeaderValue() const;

 private:
  LeaseSpec spec_;
  friend class LeaseTable;  // rotate() replaces the cell's value
  std::shared_ptr<SecretCell> secret_;  // shared: the table moves, the cell (and its mutex) does not
  std::string placeholder_;
};

// What a lease has used so far (for the trace and tests).
struct LeaseUsage {
  uint64_t requests = 0;
  uint64_t bytes = 0;
  uint64_t refused = 0;  // requests answered 429
};

class LeaseTable {
 public:
  // Reads each spec's env var through env, refusing: a duplicate lease name or env var, an
  // unset or empty variable, a value shorter than 8 or longer than 4096 bytes, and a value
  // holding a control byte (CR/LF would split the injected header). Messages name the lease
  // and the variable, never the value. Each placeholder comes from `random`.
  static Result<LeaseTable> load(std::span<const LeaseSpec> specs, const EnvLookup& env,
                                 const RandomFill& random = systemRandom,
                                 MonotonicClock clock = systemMonotonicNs);

  const Lease* find(std::string_view name) const;
  std::span<const Lease> leases() const { return leases_; }

  // "ENVVAR=placeholder" for each lease: what the sandbox environment gets.
  std::vector<std::string> sandboxEnvironment() const;
  // Every lease's secret as redaction input, labelled with the lease name. The values are
  // views into the snapshots left in *hold: build RedactionPatterns (which copies them) while
  // they live.
  std::vector<RedactTarget> redactTargets(std::vector<std::shared_ptr<const Secret>>* hold) const;
  // A rotation: lease `name` injects `value` from the next request on (checked as load
  // checks a value; the message never holds it).
  Result<void> rotate(std::string_view name, Secret value);
  // Every lease as a placeholder-mode rule.
  std::vector<PlaceholderRule> placeholderRules() const;

  // At the start of each request through a lease: nullopt when admitted (and counted), or
  // the 429 reason ("lease 'gh': rate limit of 10 requests/s (burst 20) exceeded").
  // Checks, in order: request budget, byte budget already spent, rate (token bucket).
  std::optional<std::string> chargeRequest(std::string_view name);
  // Request or response bytes as they stream: nullopt while within the byte budget, else
  // the reason; the bytes are counted either way, so every later request is refused too.
  std::optional<std::string> chargeBytes(std::string_view name, uint64_t bytes);
  LeaseUsage usage(std::string_view name) const;

 private:
  struct Budget {
    std::mutex mu;
    LeaseUsage used;
    int64_t tokens_ns = 0;  // tokens scaled by 1e9, so refill needs no floating point
    int64_t last_ns = 0;
  };
  LeaseTable() = default;
  size_t indexOf(std::string_view name) const;  // leases_.size() when unknown

  std::vector<Lease> leases_;
  std::vector<std::unique_ptr<Budget>> budgets_;  // parallel to leases_; pointers keep it movable
  MonotonicClock clock_;
};

}  // namespace corral::net
