// SPDX-License-Identifier: Apache-2.0
// Market: agents (registration, caps, suspension, appeals), events, rate limits, failpoints.
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "base/random_id.h"
#include "market/audit_chain.h"
#include "market/keys.h"
#include "market/ledger.h"
#include "market/market.h"

namespace corral::market {

const char* roleName(Role r) {
  switch (r) {
    case Role::kBuyer: return "buyer";
    case Role::kSeller: return "seller";
    case Role::kJudge: return "judge";
  }
  return "buyer";
}

std::optional<Role> parseRole(std::string_view s) {
  if (s == "buyer") return Role::kBuyer;
  if (s == "seller") return Role::kSeller;
  if (s == "judge") return Role::kJudge;
  return std::nullopt;
}

namespace {

constexpr const char* kAgentColumns =
    "id, role, name, public_key, spend_cap, reserved, spent, strikes, approve_each, suspended";

Agent agentFrom(const Rows& r, size_t i) {
  Agent a;
  a.id = r.text(i, 0);
  a.role = parseRole(r.text(i, 1)).value_or(Role::kBuyer);
  a.name = r.text(i, 2);
  a.public_key = r.text(i, 3);
  a.spend_cap = r.num(i, 4);
  a.reserved = r.num(i, 5);
  a.spent = r.num(i, 6);
  a.strikes = r.num(i, 7);
  a.approve_each = r.num(i, 8) != 0;
  a.suspended = r.num(i, 9) != 0;
  return a;
}

}  // namespace

Result<void> Market::event(Db& tx, const char* kind, const std::string& agent, const std::string& task, int64_t amount) {
  // The event row is also the audit trail's next link (market/audit_chain.h).
  return audit_chain::append(tx, {"e_" + randomHex16() + randomHex16(), now(), std::string(kind), agent, task, amount});
}

Result<Registered> Market::registerAgent(const NewAgent& a) {
  if (a.name.empty() || a.name.size() > 100) return statusError(400, "name must be 1..100 bytes");
  for (unsigned char c : a.name)
    if (c < 0x20 || c == 0x7f) return statusError(400, "name has a control byte");
  if (a.spend_cap < 0 || a.spend_cap > 1'000'000'000'00) return statusError(400, "spend cap out of range");
  auto key = keys::parsePublicKey(a.public_key);
  if (!key) return statusError(400, key.error().context());
  Registered reg{"a_" + randomHex16(), keys::newApiKey()};
  auto r = inTransaction(db_, [&](Db& tx) -> Result<void> {
    auto seen = tx.exec("INSERT INTO seen_keys (public_key, kind, owner) VALUES (?, 'agent', ?)", {a.public_key, reg.id});
    if (!seen) {
      if (seen.error().code() == kUniqueCode) return statusError(409, "public key already registered or used");
      return seen.error();
    }
    RETURN_IF_ERROR(tx.exec("INSERT INTO agents (id, role, name, api_key_hash, public_key, spend_cap, approve_each, created_at)"
                            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            {reg.id, std::string(roleName(a.role)), a.name, keys::hashApiKey(reg.api_key), a.public_key,
                             a.spend_cap, int64_t{a.approve_each ? 1 : 0}, now()}));
    // Test-mode funding: the ledger provider's stand-in for the buyer's payment method.
    if (a.role == Role::kBuyer && a.spend_cap > 0) {
      RETURN_IF_ERROR(ledger::post(tx, "fund:" + reg.id, "fund", reg.id,
                                   {{ledger::kExternalFunding, -a.spend_cap}, {ledger::buyerAvailable(reg.id), a.spend_cap}},
                                   now()));
    }
    return event(tx, "agent_registered", reg.id, "", 0);
  });
  if (!r) return r.error();
  return reg;
}

Result<void> Market::setCap(const std::string& agent, int64_t cap) {
  if (cap < 0 || cap > 1'000'000'000'00) return statusError(400, "spend cap out of range");
  return inTransaction(db_, [&](Db& tx) -> Result<void> {
    ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE agents SET spend_cap = ? WHERE id = ? AND role = 'buyer'", {cap, agent}));
    if (u.affected != 1) return statusError(404, "no such buyer");
    return event(tx, "cap_set", agent, "", cap);
  });
}

Result<void> Market::suspend(const std::string& agent) {
  return inTransaction(db_, [&](Db& tx) -> Result<void> {
    ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE agents SET suspended = 1 WHERE id = ?", {agent}));
    if (u.affected != 1) return statusError(404, "no such agent");
    return event(tx, "agent_suspended", agent, "", 0);
  });
}

Result<void> Market::reinstate(const std::string& agent) {
  return inTransaction(db_, [&](Db& tx) -> Result<void> {
    ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE agents SET suspended = 0, strikes = 0 WHERE id = ?", {agent}));
    if (u.affected != 1) return statusError(404, "no such agent");
    ASSIGN_OR_RETURN(Rows a, tx.exec("UPDATE appeals SET state = 'reinstated' WHERE seller = ? AND state = 'open'", {agent}));
    return event(tx, "agent_reinstated", agent, "", a.affected);
  });
}

Result<void> Market::uphold(const std::string& appeal) {
  return inTransaction(db_, [&](Db& tx) -> Result<void> {
    ASSIGN_OR_RETURN(Rows s, tx.exec("SELECT seller FROM appeals WHERE id = ? AND state = 'open'", {appeal}));
    if (s.empty()) return statusError(404, "no such open appeal");
    RETURN_IF_ERROR(tx.exec("UPDATE appeals SET state = 'upheld' WHERE id = ?", {appeal}));
    return event(tx, "appeal_upheld", s.text(0, 0), "", 0);
  });
}

Result<std::vector<std::pair<std::string, std::string>>> Market::openAppeals() {
  ASSIGN_OR_RETURN(Rows r, db_.exec("SELECT id, seller FROM appeals WHERE state = 'open' ORDER BY created_at, id"));
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < r.rows.size(); ++i) out.emplace_back(r.text(i, 0), r.text(i, 1));
  return out;
}

Result<void> Market::appeal(const Agent& seller) {
  return inTransaction(db_, [&](Db& tx) -> Result<void> {
    ASSIGN_OR_RETURN(Rows s, tx.exec("SELECT 1 FROM agents WHERE id = ? AND role = 'seller' AND suspended = 1", {seller.id}));
    if (s.empty()) return statusError(409, "only a suspended seller can appeal");
    ASSIGN_OR_RETURN(Rows open, tx.exec("SELECT 1 FROM appeals WHERE seller = ? AND state = 'open'", {seller.id}));
    if (!open.empty()) return statusError(409, "an appeal is already open");
    const std::string id = "p_" + randomHex16();
    RETURN_IF_ERROR(tx.exec("INSERT INTO appeals (id, seller, state, created_at) VALUES (?, ?, 'open', ?)", {id, seller.id, now()}));
    return event(tx, "appeal_opened", seller.id, "", 0);
  });
}

Result<std::optional<Agent>> Market::agentByApiKey(std::string_view api_key) {
  // Looked up by hash: the table holds no key, and equal hashes mean equal keys.
  ASSIGN_OR_RETURN(Rows r, db_.exec(std::string("SELECT ") + kAgentColumns + " FROM agents WHERE api_key_hash = ?",
                                    {keys::hashApiKey(api_key)}));
  if (r.empty()) return std::optional<Agent>();
  return std::optional<Agent>(agentFrom(r, 0));
}

Result<Agent> Market::agent(const std::string& id) {
  ASSIGN_OR_RETURN(Rows r, db_.exec(std::string("SELECT ") + kAgentColumns + " FROM agents WHERE id = ?", {id}));
  if (r.empty()) return statusError(404, "no such agent");
  return agentFrom(r, 0);
}

Result<void> Market::rateLimit(const std::string& agent, int64_t per_minute) {
  const int64_t window = now() / 60 * 60;
  // One upsert: two server processes count into the same row.
  ASSIGN_OR_RETURN(Rows r, db_.exec("INSERT INTO rate_windows (agent, window_start, hits) VALUES (?, ?, 1)"
                                    " ON CONFLICT (agent, window_start) DO UPDATE SET hits = rate_windows.hits + 1"
                                    " RETURNING hits",
                                    {agent, window}));
  if (r.num(0, 0) > per_minute) return statusError(429, "rate limit: too many requests this minute");
  return {};
}

void failpoint(const char* name) {
  // Read each time, not cached: a forked test child sets it after the parent ran.
  const char* spec = std::getenv("CORRAL_MARKET_FAILPOINT");
  if (spec == nullptr) return;
  static std::atomic<int> hits{0};
  const size_t n = std::strlen(name);
  if (std::strncmp(spec, name, n) != 0 || (spec[n] != '\0' && spec[n] != ':')) return;
  const int want = spec[n] == ':' ? static_cast<int>(std::strtol(spec + n + 1, nullptr, 10)) : 1;
  if (hits.fetch_add(1) + 1 >= want) ::raise(SIGKILL);
}

}  // namespace corral::market
