// SPDX-License-Identifier: Apache-2.0
// Placeholder mode: swap a lease's placeholder for its secret in the lease's own header, in its
// declared format, only toward the lease's own scheme, host and port; everywhere else, report
// it as a probable exfiltration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/secret.h"
#include "net/secret_cell.h"
#include "policy/egress_grant.h"
#include "policy/egress_host.h"

namespace corral::net {

struct PlaceholderRule {
  std::string lease;               // lease name, for reports
  std::string placeholder;         // what the sandbox holds
  policy::egress::Grant grant;     // the only destination it is swapped toward
  const SecretCell* secret = nullptr;  // what replaces it there (its value now); must outlive the rule
  // The one header, and the one value shape, the swap happens in (the lease's header and
  // format). Anywhere else the sandbox could choose a header the upstream stores and shows
  // back later (a note, a User-Agent in a session list), and read the secret from it.
  std::string header = "Authorization";
  std::string format = "Bearer {}";  // exactly one "{}"
};

struct RequestDestination {
  policy::egress::Scheme scheme = policy::egress::Scheme::kHttp;
  policy::egress::Host host;  // canonical, as decided by policy::egress
  uint16_t port = 0;
};

struct HeaderField {
  std::string name;
  std::string value;
};

// Where a placeholder was seen but not swapped.
enum class SuspectPlace : uint8_t {
  kHeaderOtherDestination,  // a header value toward a destination that is not the lease's
  kHeaderOtherSpelling,     // in the lease's header toward its destination, but case changed
  kHeaderUndeclared,        // toward its destination, but in another header or another format
  kHeaderName,              // inside a header name (never swapped)
  kTarget,                  // the request target (URL, query)
  kBody,                    // the request body (found by PlaceholderDetector)
};
std::string_view suspectPlaceName(SuspectPlace place);  // "header-other-destination", ...

struct Suspect {
  std::string lease;
  SuspectPlace place = SuspectPlace::kTarget;
  std::string header;  // header name for kHeader*, "" otherwise
  bool operator==(const Suspect&) const = default;
};

struct SubstitutedHeader {
  size_t index = 0;  // into the request's header list
  Secret value;      // the value to send instead: holds the secret
};

struct PlaceholderResult {
  std::vector<SubstitutedHeader> substituted;  // the caller sends these values instead
  std::vector<std::string> leases_used;        // each lease swapped at least once, in rule order
  std::vector<Suspect> suspects;               // non-empty: log as a probable exfiltration
};

// True when dest is exactly the grant's scheme, host and port (a wildcard grant never is).
bool destinationIs(const policy::egress::Grant& grant, const RequestDestination& dest);

// Placeholders are matched case-insensitively when reporting suspects (uppercasing does not
// hide one) but swapped only where a header named rule.header (any case) has exactly the value
// rule.format with the placeholder for "{}", toward the rule's own destination; the value sent
// is the format with the secret. The header list itself is not modified.
PlaceholderResult substitutePlaceholders(std::span<const PlaceholderRule> rules, const RequestDestination& dest,
                                         std::string_view target, std::span<const HeaderField> headers);

// Finds placeholders in a stream fed in chunks (request bodies), across chunk boundaries,
// case-insensitively. Holds at most (longest placeholder - 1) bytes.
class PlaceholderDetector {
 public:
  explicit PlaceholderDetector(const std::vector<std::string>& placeholders);
  void feed(std::string_view chunk);
  // Indexes (into the constructor's list) of every placeholder seen so far, ascending.
  std::vector<size_t> found() const;

 private:
  std::vector<std::string> lowered_;
  std::vector<bool> seen_;
  std::string tail_;
  size_t keep_ = 0;
};

}  // namespace corral::net
