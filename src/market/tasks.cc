// SPDX-License-Identifier: Apache-2.0
// Market: posting (reserve under the cap, then hold), claims with runner keys, key release
// and sealed results.
#include "base/random_id.h"
#include "market/keys.h"
#include "market/ledger.h"
#include "market/market.h"

namespace corral::market {
namespace {

constexpr const char* kTaskColumns =
    "id, buyer, title, category, model, state, outcome, seller, judge, verdict, reason, max_price, deadline,"
    " claim_deadline, price, fee, body_ct, runner_key, key_wrap, result_ct, result_key_wrap, judge_key, judge_wrap,"
    " (SELECT a.public_key FROM agents a WHERE a.id = tasks.buyer)";

Task taskFrom(const Rows& r, size_t i) {
  Task t;
  // cppcheck-suppress constVariable ; written through, field by field
  std::string* const texts[] = {&t.id,     &t.buyer,  &t.title,   &t.category, &t.model, &t.state,
                          &t.outcome, &t.seller, &t.judge, &t.verdict,  &t.reason};
  size_t c = 0;
  for (std::string* s : texts) *s = r.text(i, c++);
  // cppcheck-suppress constVariable ; written through, field by field
  int64_t* const nums[] = {&t.max_price, &t.deadline, &t.claim_deadline, &t.price, &t.fee};
  for (int64_t* n : nums) *n = r.num(i, c++);
  // cppcheck-suppress constVariable ; written through, field by field
  std::string* const sealed[] = {&t.body_ct, &t.runner_key, &t.key_wrap, &t.result_ct, &t.result_key_wrap, &t.judge_key, &t.judge_wrap};
  for (std::string* s : sealed) *s = r.text(i, c++);
  t.buyer_key = r.text(i, c++);
  return t;
}

// The wrap of a 32-byte key in a sealed box (32 + 48 bytes), or of two keys (64 + 48).
Result<void> checkWrap(const std::string& b64, size_t key_bytes) {
  auto raw = keys::fromBase64(b64);
  if (!raw || raw->size() != key_bytes + 48) return statusError(400, "wrap must be a base64 sealed box of the key");
  return {};
}

Result<void> refuseUnless(const Rows& r, int status, const char* why) {
  if (r.affected == 1) return {};
  return statusError(status, why);
}

// Records a runner key as spent, in the claim's transaction. One UNIQUE column holds every
// agent's key and every runner key ever presented, so both rules are this one insert.
Result<void> spendRunnerKey(Db& tx, const std::string& key, const char* kind, const std::string& owner) {
  auto seen = tx.exec("INSERT INTO seen_keys (public_key, kind, owner) VALUES (?, ?, ?)", {key, std::string(kind), owner});
  if (seen) return {};
  if (seen.error().code() == kUniqueCode) return statusError(409, "runner key refused: an agent's key or used before");
  return seen.error();
}

}  // namespace

Result<Task> Market::taskIn(Db& db, const std::string& id) {
  ASSIGN_OR_RETURN(Rows r, db.exec(std::string("SELECT ") + kTaskColumns + " FROM tasks WHERE id = ?", {id}));
  if (r.empty()) return statusError(404, "no such task");
  return taskFrom(r, 0);
}

Result<Task> Market::task(const std::string& id) { return taskIn(db_, id); }

Result<std::vector<Task>> Market::tasksFor(const Agent& who) {
  // Buyers see their own tasks; sellers and judges see what is open to them and what they hold.
  const char* where = who.role == Role::kBuyer    ? " WHERE buyer = ?"
                      : who.role == Role::kSeller ? " WHERE state = 'open' OR seller = ?"
                                                  : " WHERE state = 'submitted' OR judge = ?";
  ASSIGN_OR_RETURN(Rows r, db_.exec(std::string("SELECT ") + kTaskColumns + " FROM tasks" + where +
                                        " ORDER BY created_at, id LIMIT 500",
                                    {who.id}));
  std::vector<Task> out;
  for (size_t i = 0; i < r.rows.size(); ++i) out.push_back(taskFrom(r, i));
  return out;
}

Result<Task> Market::post(const Agent& buyer, const NewTask& nt) {
  if (buyer.role != Role::kBuyer) return statusError(403, "only a buyer posts tasks");
  if (nt.max_price <= 0 || nt.max_price > 1'000'000'00) return statusError(400, "max_price must be 1..100000000 cents");
  if (nt.deadline <= now()) return statusError(400, "deadline is in the past");
  Task t;
  t.id = "t_" + randomHex16();
  t.buyer = buyer.id;
  t.max_price = nt.max_price;
  t.state = buyer.approve_each ? "pending_approval" : "reserved";
  auto r = inTransaction(db_, [&](Db& tx) -> Result<void> {
    if (!buyer.approve_each) {
      // Invariant: the cap rule is this one statement. Read-then-write would let two
      // concurrent posts both see room for one.
      ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE agents SET reserved = reserved + ? WHERE id = ? AND suspended = 0"
                                       " AND reserved + spent + ? <= spend_cap",
                                       {nt.max_price, buyer.id, nt.max_price}));
      RETURN_IF_ERROR(refuseUnless(u, 402, "spend cap would be exceeded"));
    }
    RETURN_IF_ERROR(tx.exec("INSERT INTO tasks (id, buyer, title, category, model, max_price, deadline, state, body_ct,"
                            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            {t.id, buyer.id, nt.title, nt.category, nt.model, nt.max_price, nt.deadline, t.state,
                             nt.body_ct, now(), now()}));
    return event(tx, buyer.approve_each ? "task_pending_approval" : "task_reserved", buyer.id, t.id, nt.max_price);
  });
  if (!r) return r.error();
  if (!buyer.approve_each) RETURN_IF_ERROR(reserveAndHold(t));
  return task(t.id);
}

Result<void> Market::reserveAndHold(const Task& t) {
  failpoint("post.reserved");
  auto held = provider_.hold("hold:" + t.id, t.buyer, t.id, t.max_price);
  failpoint("post.held");
  if (!held) {
    // Give the reservation back, once: the state test makes a second attempt a no-op.
    auto back = inTransaction(db_, [&](Db& tx) -> Result<void> {
      ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE tasks SET state = 'hold_failed', updated_at = ? WHERE id = ? AND state = 'reserved'",
                                       {now(), t.id}));
      if (u.affected != 1) return {};
      RETURN_IF_ERROR(tx.exec("UPDATE agents SET reserved = reserved - ? WHERE id = ?", {t.max_price, t.buyer}));
      return event(tx, "hold_failed", t.buyer, t.id, t.max_price);
    });
    if (!back) return back.error();
    return statusError(402, "payment hold refused; the reservation was given back");
  }
  return inTransaction(db_, [&](Db& tx) -> Result<void> {
    ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE tasks SET state = 'open', updated_at = ? WHERE id = ? AND state = 'reserved'",
                                     {now(), t.id}));
    if (u.affected != 1) return {};
    return event(tx, "task_open", t.buyer, t.id, t.max_price);
  });
}

Result<void> Market::approve(const std::string& id) {
  ASSIGN_OR_RETURN(Task t, task(id));
  auto r = inTransaction(db_, [&](Db& tx) -> Result<void> {
    ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE agents SET reserved = reserved + ? WHERE id = ? AND suspended = 0"
                                     " AND reserved + spent + ? <= spend_cap",
                                     {t.max_price, t.buyer, t.max_price}));
    RETURN_IF_ERROR(refuseUnless(u, 402, "spend cap would be exceeded"));
    ASSIGN_OR_RETURN(Rows s, tx.exec("UPDATE tasks SET state = 'reserved', updated_at = ? WHERE id = ? AND state = 'pending_approval'",
                                     {now(), id}));
    RETURN_IF_ERROR(refuseUnless(s, 409, "task is not pending approval"));
    return event(tx, "task_approved", t.buyer, id, t.max_price);
  });
  if (!r) {
    if (httpStatus(r.error()) == 402) (void)rejectPending(id);  // still refused: it would exceed the cap
    return r.error();
  }
  t.state = "reserved";
  return reserveAndHold(t);
}

Result<void> Market::rejectPending(const std::string& id) {
  return inTransaction(db_, [&](Db& tx) -> Result<void> {
    ASSIGN_OR_RETURN(Rows s, tx.exec("UPDATE tasks SET state = 'refused', updated_at = ? WHERE id = ? AND state = 'pending_approval'",
                                     {now(), id}));
    RETURN_IF_ERROR(refuseUnless(s, 409, "task is not pending approval"));
    return event(tx, "task_refused", "", id, 0);
  });
}

Result<void> Market::claim(const Agent& seller, const std::string& id, const std::string& runner_key) {
  if (seller.role != Role::kSeller) return statusError(403, "only a seller claims tasks");
  auto key = keys::parsePublicKey(runner_key);
  if (!key) return statusError(400, "runner key refused: " + key.error().context());
  return inTransaction(db_, [&](Db& tx) -> Result<void> {
    RETURN_IF_ERROR(spendRunnerKey(tx, runner_key, "runner", seller.id));
    // Invariant: exactly one racing seller matches state = 'open'.
    ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE tasks SET state = 'claimed', seller = ?, runner_key = ?, claim_deadline = ?,"
                                     " updated_at = ? WHERE id = ? AND state = 'open' AND EXISTS (SELECT 1 FROM agents"
                                     " WHERE id = ? AND suspended = 0)",
                                     {seller.id, runner_key, now() + cfg_.claim_seconds, now(), id, seller.id}));
    RETURN_IF_ERROR(refuseUnless(u, 409, "task is not open to claim (or the seller is suspended)"));
    return event(tx, "task_claimed", seller.id, id, 0);
  });
}

Result<void> Market::releaseKey(const Agent& buyer, const std::string& id, const std::string& wrap) {
  RETURN_IF_ERROR(checkWrap(wrap, 32));
  return inTransaction(db_, [&](Db& tx) -> Result<void> {
    ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE tasks SET key_wrap = ?, updated_at = ? WHERE id = ? AND buyer = ? AND state = 'claimed'",
                                     {wrap, now(), id, buyer.id}));
    RETURN_IF_ERROR(refuseUnless(u, 409, "not your claimed task"));
    return event(tx, "key_released", buyer.id, id, 0);
  });
}

Result<void> Market::submit(const Agent& seller, const std::string& id, const std::string& result_ct,
                            const std::string& result_key_wrap) {
  RETURN_IF_ERROR(checkWrap(result_key_wrap, 32));
  auto ct = keys::fromBase64(result_ct);
  if (!ct || ct->size() < 40) return statusError(400, "result must be base64 secretbox ciphertext");
  return inTransaction(db_, [&](Db& tx) -> Result<void> {
    ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE tasks SET result_ct = ?, result_key_wrap = ?, state = 'submitted', updated_at = ?"
                                     " WHERE id = ? AND seller = ? AND state = 'claimed' AND key_wrap IS NOT NULL"
                                     " AND claim_deadline >= ?",
                                     {result_ct, result_key_wrap, now(), id, seller.id, now()}));
    RETURN_IF_ERROR(refuseUnless(u, 409, "not your claimed task, no key yet, or the claim expired"));
    return event(tx, "result_submitted", seller.id, id, static_cast<int64_t>(ct->size()));
  });
}

Result<void> Market::claimReview(const Agent& judge, const std::string& id, const std::string& runner_key) {
  if (judge.role != Role::kJudge) return statusError(403, "only a judge reviews");
  auto key = keys::parsePublicKey(runner_key);
  if (!key) return statusError(400, "runner key refused: " + key.error().context());
  return inTransaction(db_, [&](Db& tx) -> Result<void> {
    RETURN_IF_ERROR(spendRunnerKey(tx, runner_key, "judge-runner", judge.id));
    ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE tasks SET state = 'reviewing', judge = ?, judge_key = ?, judge_wrap = NULL,"
                                     " updated_at = ? WHERE id = ? AND state = 'submitted'",
                                     {judge.id, runner_key, now(), id}));
    RETURN_IF_ERROR(refuseUnless(u, 409, "task is not waiting for review"));
    return event(tx, "review_claimed", judge.id, id, 0);
  });
}

Result<void> Market::releaseJudgeKey(const Agent& buyer, const std::string& id, const std::string& wrap) {
  RETURN_IF_ERROR(checkWrap(wrap, 64));
  return inTransaction(db_, [&](Db& tx) -> Result<void> {
    ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE tasks SET judge_wrap = ?, updated_at = ? WHERE id = ? AND buyer = ? AND state = 'reviewing'",
                                     {wrap, now(), id, buyer.id}));
    RETURN_IF_ERROR(refuseUnless(u, 409, "not your task under review"));
    return event(tx, "judge_key_released", buyer.id, id, 0);
  });
}

}  // namespace corral::market
