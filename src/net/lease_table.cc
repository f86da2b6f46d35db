// SPDX-License-Identifier: Apache-2.0
// Loaded credential leases: loading from the operator's environment, placeholders, budgets.
#include "net/lease_table.h"

#include <sys/random.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "policy/units.h"

namespace corral::net {
namespace {

constexpr int64_t kNsPerSecond = 1'000'000'000;

Error invalid(std::string context) { return Error(Errc::kInvalidArgument, std::move(context)); }

// Refuses values that cannot be sent as one header line. The message never shows the value.
Result<void> checkSecretValue(const LeaseSpec& spec, std::string_view value) {
  std::string who = "credential '" + spec.name + "': environment variable " + spec.env;
  if (value.empty()) return invalid(who + " is empty");
  if (value.size() < kMinSecretBytes)
    return invalid(who + " holds fewer than 8 bytes (too short to redact without damaging ordinary text)");
  if (value.size() > kMaxSecretBytes) return invalid(who + " holds more than 4096 bytes");
  for (char c : value) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f)
      return invalid(who + " holds a control byte (CR, LF or NUL would split or cut the injected header)");
  }
  return {};
}

}  // namespace

std::optional<std::string> processEnvironment(std::string_view name) {
  const char* v = ::getenv(std::string(name).c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

Result<void> systemRandom(std::span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::getrandom(out.data() + done, out.size() - done, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return sysError("getrandom");
    }
    done += static_cast<size_t>(n);
  }
  return {};
}

int64_t systemMonotonicNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * kNsPerSecond + ts.tv_nsec;
}

Secret Lease::injectedHeaderValue() const {
  const std::string& f = spec_.format;
  size_t at = f.find("{}");  // checkFormat guarantees exactly one
  std::string out = f.substr(0, at);
  const std::shared_ptr<const Secret> now = secret_->current();
  out.append(now->revealForInjection());
  out.append(f, at + 2);
  return Secret(std::move(out));
}

Result<LeaseTable> LeaseTable::load(std::span<const LeaseSpec> specs, const EnvLookup& env,
                                    const RandomFill& random, MonotonicClock clock) {
  LeaseTable table;
  table.clock_ = std::move(clock);
  std::set<std::string> names, envs;
  int64_t now = table.clock_();
  for (const LeaseSpec& spec : specs) {
    if (!names.insert(spec.name).second) return invalid("credential '" + spec.name + "' is named twice");
    if (!envs.insert(spec.env).second)
      return invalid("credential '" + spec.name + "': environment variable " + spec.env +
                     " is already used by another credential (the sandbox gets one placeholder per variable)");
    if (spec.limits.rate_per_second == 0 || spec.limits.burst == 0 || spec.limits.rate_per_second > kMaxRate ||
        spec.limits.burst > kMaxRate || spec.limits.max_requests == 0 || spec.limits.max_bytes == 0)
      return invalid("credential '" + spec.name + "': limits must be positive (rate and burst at most 100000)");
    std::optional<std::string> value = env(spec.env);
    if (!value) return invalid("credential '" + spec.name + "': environment variable " + spec.env + " is not set");
    Secret secret(std::move(*value));
    RETURN_IF_ERROR(checkSecretValue(spec, secret.revealForInjection()));
    uint8_t bytes[kPlaceholderRandomBytes];
    if (auto r = random(bytes); !r) return r.error().wrap("credential '" + spec.name + "': placeholder");
    std::string placeholder = leasePlaceholder(spec.name, bytes);
    table.leases_.emplace_back(spec, std::move(secret), std::move(placeholder));
    auto budget = std::make_unique<Budget>();
    budget->tokens_ns = static_cast<int64_t>(spec.limits.burst) * kNsPerSecond;  // starts full
    budget->last_ns = now;
    table.budgets_.push_back(std::move(budget));
  }
  return table;
}

size_t LeaseTable::indexOf(std::string_view name) const {
  for (size_t i = 0; i < leases_.size(); ++i)
    if (leases_[i].name() == name) return i;
  return leases_.size();
}

const Lease* LeaseTable::find(std::string_view name) const {
  size_t i = indexOf(name);
  return i < leases_.size() ? &leases_[i] : nullptr;
}

std::vector<std::string> LeaseTable::sandboxEnvironment() const {
  std::vector<std::string> out;
  for (const Lease& l : leases_) out.push_back(l.spec().env + "=" + l.placeholder());
  return out;
}

std::vector<RedactTarget> LeaseTable::redactTargets(std::vector<std::shared_ptr<const Secret>>* hold) const {
  std::vector<RedactTarget> out;
  // The secret leaves as pattern input for redaction, never toward the sandbox.
  for (const Lease& l : leases_) {
    hold->push_back(l.secret().current());
    out.push_back({l.name(), hold->back()->revealForInjection()});
  }
  return out;
}

Result<void> LeaseTable::rotate(std::string_view name, Secret value) {
  const size_t i = indexOf(name);
  if (i == leases_.size()) return Error(Errc::kInvalidArgument, "lease '" + policy::printable(name) + "' does not exist");
  RETURN_IF_ERROR(checkSecretValue(leases_[i].spec(), value.revealForInjection()));
  leases_[i].secret_->replace(std::move(value));
  return {};
}

std::vector<PlaceholderRule> LeaseTable::placeholderRules() const {
  std::vector<PlaceholderRule> out;
  for (const Lease& l : leases_)
    out.push_back({l.name(), l.placeholder(), l.grant(), &l.secret(), l.spec().header, l.spec().format});
  return out;
}

std::optional<std::string> LeaseTable::chargeRequest(std::string_view name) {
  size_t i = indexOf(name);
  if (i == leases_.size()) return "lease '" + policy::printable(name) + "' does not exist";
  const LeaseLimits& lim = leases_[i].spec().limits;
  Budget& b = *budgets_[i];
  std::lock_guard lock(b.mu);
  std::string who = "lease '" + leases_[i].name() + "': ";
  auto refuse = [&](const std::string& reason) {
    ++b.used.refused;
    return who + reason;
  };
  if (b.used.requests >= lim.max_requests)
    return refuse("request budget of " + std::to_string(lim.max_requests) + " requests used up");
  if (b.used.bytes >= lim.max_bytes)
    return refuse("byte budget of " + std::to_string(lim.max_bytes) + " bytes used up");
  // Token bucket in units of 1e-9 token. Elapsed time is capped at what refills an empty
  // bucket, so neither a clock jump nor a long idle period can overflow the arithmetic.
  const int64_t cap = static_cast<int64_t>(lim.burst) * kNsPerSecond;
  int64_t now = clock_();
  int64_t elapsed = std::clamp<int64_t>(now - b.last_ns, 0, cap / lim.rate_per_second + 1);
  b.last_ns = std::max(b.last_ns, now);
  b.tokens_ns = std::min(cap, b.tokens_ns + elapsed * lim.rate_per_second);
  if (b.tokens_ns < kNsPerSecond) {
    int64_t wait_ms = ((kNsPerSecond - b.tokens_ns) / lim.rate_per_second + 999'999) / 1'000'000;
    return refuse("rate limit of " + std::to_string(lim.rate_per_second) + " requests/s (burst " +
                  std::to_string(lim.burst) + ") exceeded; retry in " + std::to_string(wait_ms) + " ms");
  }
  b.tokens_ns -= kNsPerSecond;
  ++b.used.requests;
  return std::nullopt;
}

std::optional<std::string> LeaseTable::chargeBytes(std::string_view name, uint64_t bytes) {
  size_t i = indexOf(name);
  if (i == leases_.size()) return "lease '" + policy::printable(name) + "' does not exist";
  const LeaseLimits& lim = leases_[i].spec().limits;
  Budget& b = *budgets_[i];
  std::lock_guard lock(b.mu);
  b.used.bytes = bytes > UINT64_MAX - b.used.bytes ? UINT64_MAX : b.used.bytes + bytes;
  if (b.used.bytes > lim.max_bytes)
    return "lease '" + leases_[i].name() + "': byte budget of " + std::to_string(lim.max_bytes) + " bytes exceeded";
  return std::nullopt;
}

LeaseUsage LeaseTable::usage(std::string_view name) const {
  size_t i = indexOf(name);
  if (i == leases_.size()) return {};
  std::lock_guard lock(budgets_[i]->mu);
  return budgets_[i]->used;
}

}  // namespace corral::net
