// SPDX-License-Identifier: Apache-2.0
// Market: the marketplace's operations on one database connection (agents, tasks, money).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "market/db.h"
#include "market/provider.h"

namespace corral::market {

// An error that carries its HTTP status (code 20000 + status); the message is fixed text
// and ids, never request data.
Error statusError(int http_status, std::string message);
int httpStatus(const Error& e);

struct Config {
  int64_t fee_bps = 1000;            // platform fee, basis points of the price
  int64_t suspend_after_strikes = 3;
  int64_t claim_seconds = 600;       // a claim not answered by then is released
  std::function<int64_t()> now;      // unix seconds; tests move time
};

enum class Role { kBuyer, kSeller, kJudge };
const char* roleName(Role r);
std::optional<Role> parseRole(std::string_view s);

struct Agent {
  std::string id;
  Role role = Role::kBuyer;
  std::string name;
  std::string public_key;  // hex
  int64_t spend_cap = 0, reserved = 0, spent = 0, strikes = 0;
  bool approve_each = false, suspended = false;
};

struct NewAgent {
  Role role = Role::kBuyer;
  std::string name;
  std::string public_key;  // hex, checked like a runner key
  int64_t spend_cap = 0;   // buyers: also the test-mode funding placed on their balance
  bool approve_each = false;
};

struct Registered {
  std::string id;
  std::string api_key;  // shown once; the server keeps its hash only
};

struct NewTask {
  std::string title, category, model;
  int64_t max_price = 0;
  int64_t deadline = 0;  // unix seconds
  std::string body_ct;   // base64 secretbox ciphertext
};

struct Task {
  std::string id, buyer, title, category, model, state, outcome, seller, judge, verdict, reason;
  int64_t max_price = 0, deadline = 0, claim_deadline = 0, price = 0, fee = 0;
  // Sealed material; views decide who sees which.
  std::string body_ct, runner_key, key_wrap, result_ct, result_key_wrap, judge_key, judge_wrap;
  std::string buyer_key;  // the buyer's public key (agents.public_key), for sealing R to it
};

enum class Verdict { kAccept, kReject, kDefer };
struct ReasonCode {
  const char* code;
  Verdict verdict;
  const char* text;       // the only text ever published for a verdict
  bool infrastructure;    // a judge failure: defers, never strikes
};
const std::vector<ReasonCode>& reasonCodes();

class Market {
 public:
  Market(Db& db, PaymentProvider& provider, const Config& cfg) : db_(db), provider_(provider), cfg_(cfg) {}

  // Admin.
  Result<Registered> registerAgent(const NewAgent& a);
  Result<void> setCap(const std::string& agent, int64_t cap);
  Result<void> suspend(const std::string& agent);
  Result<void> reinstate(const std::string& agent);   // also closes open appeals
  Result<void> uphold(const std::string& appeal);
  Result<std::vector<std::pair<std::string, std::string>>> openAppeals();  // (appeal id, seller)
  Result<void> approve(const std::string& task);       // pending_approval -> reserve + hold
  Result<void> rejectPending(const std::string& task);
  Result<void> refund(const std::string& task);        // after capture: admin only

  // Agents (authenticated by the caller).
  Result<std::optional<Agent>> agentByApiKey(std::string_view api_key);
  Result<Agent> agent(const std::string& id);
  Result<Task> post(const Agent& buyer, const NewTask& t);
  Result<Task> task(const std::string& id);
  Result<std::vector<Task>> tasksFor(const Agent& who);
  Result<void> claim(const Agent& seller, const std::string& task, const std::string& runner_key_hex);
  Result<void> releaseKey(const Agent& buyer, const std::string& task, const std::string& wrap_b64);
  Result<void> submit(const Agent& seller, const std::string& task, const std::string& result_ct,
                      const std::string& result_key_wrap);
  Result<void> claimReview(const Agent& judge, const std::string& task, const std::string& runner_key_hex);
  Result<void> releaseJudgeKey(const Agent& buyer, const std::string& task, const std::string& wrap_b64);
  Result<void> verdict(const Agent& judge, const std::string& task, const std::string& code);
  Result<void> appeal(const Agent& seller);
  // Counts a request against the agent's per-minute budget; kLimit-style 429 when over.
  Result<void> rateLimit(const std::string& agent, int64_t per_minute);

  // Recovery at start and the periodic sweep: finishes or reverts every movement in flight
  // by its idempotency key, releases overdue claims and expires overdue tasks.
  Result<int64_t> recover();
  Result<int64_t> sweep();

 private:
  Result<void> reserveAndHold(const Task& t);
  Result<void> finishSettlement(const Task& t);
  Result<void> finishRelease(const Task& t);
  Result<void> finishRefund(const Task& t);
  Result<void> event(Db& tx, const char* kind, const std::string& agent, const std::string& task, int64_t amount);
  Result<Task> taskIn(Db& db, const std::string& id);
  int64_t now() const { return cfg_.now ? cfg_.now() : 0; }

  Db& db_;
  PaymentProvider& provider_;
  const Config& cfg_;
};

// Test hook: CORRAL_MARKET_FAILPOINT=name[:N] kills this process with SIGKILL the Nth time
// (default first) execution reaches `name`. Unset, it costs one branch.
void failpoint(const char* name);

}  // namespace corral::market
