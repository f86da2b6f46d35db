// SPDX-License-Identifier: Apache-2.0
// One broker-mode lease request, run blocking on a lease worker: verified TLS (or TCP for an
// http grant) to the lease's upstream, the credential injected, the body streamed up, the
// response redacted and re-framed on its way back. docs/credential-leases.md.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/unique_fd.h"
#include "net/http_request.h"
#include "net/lease_broker.h"

namespace corral::net {

// The two sockets of a lease request. The job owns them until it is destroyed, so cancel()
// from the proxy thread can never touch a reused fd number; the worker uses them (and dups)
// and never closes them.
class LeaseJob {
 public:
  LeaseJob(UniqueFd client, UniqueFd upstream) : client_(std::move(client)), upstream_(std::move(upstream)) {}
  int client() const { return client_.get(); }
  int upstream() const { return upstream_.get(); }
  // Wakes a worker blocked on either socket (shutdown(2) both ways); idempotent.
  void cancel();
  bool cancelled() const { return cancelled_.load(); }

 private:
  UniqueFd client_, upstream_;
  std::atomic<bool> cancelled_{false};
};

struct LeaseCall {
  std::shared_ptr<LeaseBroker> broker;
  const Lease* lease = nullptr;  // owned by broker
  RequestHead head;              // the client's request, as parsed
  std::string upstream_target;   // "/path?query", origin-form toward the upstream
  std::string body_prefix;       // bytes that arrived after the head
  std::chrono::milliseconds idle_timeout{300000};  // each wait on the client
};

struct LeaseOutcome {
  // Set when nothing but (at most) a 100 Continue went to the client: the proxy thread sends
  // this refusal. Otherwise the response, or a part of it, has been sent.
  std::optional<int> refuse_status;
  std::string rule = "allowed";  // "allowed", or why the exchange ended early
  std::string reason;            // one line, never a secret: the 429 reason, the TLS failure
  bool complete = false;         // the whole response reached the client
  int status = 0;                // upstream status relayed
  uint64_t bytes_up = 0;         // bytes written to the upstream (head and body)
  uint64_t bytes_down = 0;       // bytes written to the client
  uint64_t redactions = 0;
};

LeaseOutcome runLeaseExchange(const LeaseCall& call, LeaseJob& job);

}  // namespace corral::net
