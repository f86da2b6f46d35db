// SPDX-License-Identifier: Apache-2.0
// Credential lease specs: the operator's --credential text or manifest entry, validated.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "policy/egress_grant.h"

namespace corral::net {

// Per-lease ceilings. Exceeding one is a 429 naming the limit (docs/credential-leases.md).
struct LeaseLimits {
  uint64_t max_requests = 10'000;                 // requests admitted over the lease's life
  uint64_t max_bytes = uint64_t{1} << 30;         // request + response bytes, 1 GiB
  uint32_t rate_per_second = 10;                  // token bucket refill
  uint32_t burst = 20;                            // token bucket capacity
  bool operator==(const LeaseLimits&) const = default;
};

inline constexpr size_t kMaxLeaseName = 64;
inline constexpr size_t kMaxHeaderName = 64;
inline constexpr size_t kMaxFormat = 256;
inline constexpr uint32_t kMaxRate = 100'000;

// A validated lease: no secret here, only where the secret comes from and where it goes.
struct LeaseSpec {
  std::string name;                 // [a-z0-9_-]{1,64}
  std::string env;                  // [A-Z_][A-Z0-9_]*: read on the operator's side
  policy::egress::Grant grant;      // exact scheme, host and port; never a wildcard
  std::string header = "Authorization";
  std::string format = "Bearer {}"; // exactly one "{}", replaced by the secret
  LeaseLimits limits;
  bool operator==(const LeaseSpec&) const = default;
};

// --credential text:
//   NAME=ENVVAR@scheme://host[:port] *( ";" key "=" value )
// keys: header, format, max_requests, max_bytes (a size: 64M), rate (per second), burst.
// Each key at most once. A format holding ';' must come from the manifest instead.
// Errors (kInvalidArgument) start "--credential" and name the rule; the secret is never
// involved, as the text holds only the variable's name.
Result<LeaseSpec> parseCredentialFlag(std::string_view text);

// The manifest's credentials[] entry, field by field (policy::CredentialSpec), with default
// limits. Errors start "credentials 'NAME'".
Result<LeaseSpec> leaseFromFields(std::string_view name, std::string_view env, std::string_view url,
                                  std::string_view header, std::string_view format);

// The canonical --credential text: parseCredentialFlag(credentialText(s)) == s when s.format
// has no ';'.
std::string credentialText(const LeaseSpec& spec);

// The placeholder the sandbox gets for a lease in place of its secret:
// "corral-lease-NAME-" and the 16 random bytes in hex.
inline constexpr size_t kPlaceholderRandomBytes = 16;
std::string leasePlaceholder(std::string_view name, std::span<const uint8_t, kPlaceholderRandomBytes> random);

// Single-field checks, shared by both entry points (messages name the rule, not the context).
Result<void> checkLeaseName(std::string_view name);
Result<void> checkEnvName(std::string_view env);
Result<policy::egress::Grant> parseLeaseUrl(std::string_view url);
Result<void> checkHeaderName(std::string_view header);
Result<void> checkFormat(std::string_view format);

// The origin-form a lease request sends upstream ("/rest?query", from /lease/NAME/rest?query)
// must name a path on the lease's own origin: refused (kRefused, the reason names the rule,
// never the path) when it starts with "//" (read as an authority by some servers and
// redirectors), holds a "." or ".." segment (also as %2e), or a backslash (also %5c), which
// some servers treat as "/". The credential is attached to whatever this path reaches.
Result<void> checkLeasePath(std::string_view origin_form);

}  // namespace corral::net
