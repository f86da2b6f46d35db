// SPDX-License-Identifier: Apache-2.0
// Market: verdicts with fixed reason codes, settlement (capture, transfer, release,
// refund), strikes, and recovery of every movement in flight.
#include "market/ledger.h"
#include "market/market.h"

namespace corral::market {

const std::vector<ReasonCode>& reasonCodes() {
  // The published text of a verdict is one of these strings; the judge model's own words
  // never reach the server's tables or answers.
  static const std::vector<ReasonCode> kCodes = {
      {"meets_requirements", Verdict::kAccept, "The result meets the task's requirements.", false},
      {"incomplete", Verdict::kReject, "The result does not complete the task.", false},
      {"incorrect", Verdict::kReject, "The result is incorrect.", false},
      {"off_task", Verdict::kReject, "The result does not address the task.", false},
      {"policy_violation", Verdict::kReject, "The result violates the marketplace policy.", false},
      {"needs_human", Verdict::kDefer, "The review needs a human.", false},
      {"judge_unavailable", Verdict::kDefer, "The judge could not reach its model; the review is deferred.", true},
      {"judge_timeout", Verdict::kDefer, "The judge's model timed out; the review is deferred.", true},
      {"judge_malformed", Verdict::kDefer, "The judge's model gave a malformed answer; the review is deferred.", true},
  };
  return kCodes;
}

Result<void> Market::verdict(const Agent& judge, const std::string& id, const std::string& code) {
  if (judge.role != Role::kJudge) return statusError(403, "only a judge gives verdicts");
  const ReasonCode* rc = nullptr;
  for (const ReasonCode& c : reasonCodes())
    if (code == c.code) rc = &c;
  if (rc == nullptr) return statusError(400, "unknown reason code");
  ASSIGN_OR_RETURN(Task t, task(id));
  const char* verdict_name = rc->verdict == Verdict::kAccept ? "accept" : rc->verdict == Verdict::kReject ? "reject" : "defer";
  const int64_t price = t.max_price;
  const int64_t fee = price * cfg_.fee_bps / 10000;
  auto decided = inTransaction(db_, [&](Db& tx) -> Result<void> {
    const std::string next = rc->verdict == Verdict::kAccept ? "capturing" : rc->verdict == Verdict::kReject ? "releasing" : "submitted";
    // A deferral hands the task back to the review queue; the judge's runner key stays used.
    ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE tasks SET state = ?, outcome = ?, verdict = ?, reason = ?, price = ?, fee = ?,"
                                     " updated_at = ? WHERE id = ? AND state = 'reviewing' AND judge = ?",
                                     {next, std::string(rc->verdict == Verdict::kReject ? "rejected" : ""),
                                      std::string(verdict_name), std::string(rc->code),
                                      rc->verdict == Verdict::kAccept ? price : int64_t{0},
                                      rc->verdict == Verdict::kAccept ? fee : int64_t{0}, now(), id, judge.id}));
    if (u.affected != 1) return statusError(409, "task is not under your review");
    RETURN_IF_ERROR(event(tx, rc->verdict == Verdict::kAccept   ? "verdict_accept"
                              : rc->verdict == Verdict::kReject ? "verdict_reject"
                                                                : "verdict_defer",
                          judge.id, id, 0));
    // Only a judged rejection strikes; an infrastructure failure is a deferral, never a strike.
    if (rc->verdict == Verdict::kReject) {
      RETURN_IF_ERROR(tx.exec("UPDATE agents SET strikes = strikes + 1 WHERE id = ?", {t.seller}));
      RETURN_IF_ERROR(event(tx, "seller_strike", t.seller, id, 1));
      ASSIGN_OR_RETURN(Rows s, tx.exec("UPDATE agents SET suspended = 1 WHERE id = ? AND suspended = 0 AND strikes >= ?",
                                       {t.seller, cfg_.suspend_after_strikes}));
      if (s.affected == 1) RETURN_IF_ERROR(event(tx, "agent_suspended", t.seller, id, 0));
    }
    return {};
  });
  if (!decided) return decided.error();
  ASSIGN_OR_RETURN(Task now_t, task(id));
  if (rc->verdict == Verdict::kAccept) return finishSettlement(now_t);
  if (rc->verdict == Verdict::kReject) return finishRelease(now_t);
  return {};
}

Result<void> Market::finishSettlement(const Task& t) {
  failpoint("settle.decided");
  RETURN_IF_ERROR(provider_.capture("capture:" + t.id, t.buyer, t.id, t.max_price, t.price));
  failpoint("settle.captured");
  RETURN_IF_ERROR(provider_.transfer("transfer:" + t.id, t.seller, t.id, t.price, t.fee));
  failpoint("settle.transferred");
  return inTransaction(db_, [&](Db& tx) -> Result<void> {
    ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE tasks SET state = 'settled', updated_at = ? WHERE id = ? AND state = 'capturing'",
                                     {now(), t.id}));
    if (u.affected != 1) return {};  // another process finished it
    RETURN_IF_ERROR(tx.exec("UPDATE agents SET reserved = reserved - ?, spent = spent + ? WHERE id = ?",
                            {t.max_price, t.price, t.buyer}));
    return event(tx, "task_settled", t.seller, t.id, t.price);
  });
}

Result<void> Market::finishRelease(const Task& t) {
  failpoint("release.decided");
  RETURN_IF_ERROR(provider_.release("release:" + t.id, t.buyer, t.id, t.max_price));
  failpoint("release.released");
  return inTransaction(db_, [&](Db& tx) -> Result<void> {
    ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE tasks SET state = outcome, updated_at = ? WHERE id = ? AND state = 'releasing'",
                                     {now(), t.id}));
    if (u.affected != 1) return {};
    RETURN_IF_ERROR(tx.exec("UPDATE agents SET reserved = reserved - ? WHERE id = ?", {t.max_price, t.buyer}));
    return event(tx, "hold_released", t.buyer, t.id, t.max_price);
  });
}

Result<void> Market::refund(const std::string& id) {
  ASSIGN_OR_RETURN(Task t, task(id));
  RETURN_IF_ERROR(inTransaction(db_, [&](Db& tx) -> Result<void> {
    ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE tasks SET state = 'refunding', updated_at = ? WHERE id = ? AND state = 'settled'",
                                     {now(), id}));
    if (u.affected != 1) return statusError(409, "only a settled task can be refunded");
    return event(tx, "refund_started", t.buyer, id, t.price);
  }));
  return finishRefund(t);
}

Result<void> Market::finishRefund(const Task& t) {
  RETURN_IF_ERROR(provider_.refund("refund:" + t.id, t.buyer, t.seller, t.id, t.price, t.fee));
  failpoint("refund.refunded");
  return inTransaction(db_, [&](Db& tx) -> Result<void> {
    ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE tasks SET state = 'refunded', updated_at = ? WHERE id = ? AND state = 'refunding'",
                                     {now(), t.id}));
    if (u.affected != 1) return {};
    RETURN_IF_ERROR(tx.exec("UPDATE agents SET spent = spent - ? WHERE id = ?", {t.price, t.buyer}));
    return event(tx, "task_refunded", t.buyer, t.id, t.price);
  });
}

Result<int64_t> Market::recover() {
  ASSIGN_OR_RETURN(Rows r, db_.exec("SELECT id FROM tasks WHERE state IN ('reserved', 'capturing', 'releasing', 'refunding')"
                                    " ORDER BY id"));
  int64_t done = 0;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    ASSIGN_OR_RETURN(Task t, task(r.text(i, 0)));
    Result<void> step = t.state == "reserved"    ? reserveAndHold(t)
                        : t.state == "capturing" ? finishSettlement(t)
                        : t.state == "releasing" ? finishRelease(t)
                                                 : finishRefund(t);
    // A hold the provider refuses on replay was reverted inside reserveAndHold: recovered.
    if (!step && !(t.state == "reserved" && httpStatus(step.error()) == 402)) return step.error();
    ++done;
  }
  return done;
}

Result<int64_t> Market::sweep() {
  int64_t n = 0;
  // Overdue claims go back to open; the runner key stays spent.
  ASSIGN_OR_RETURN(Rows claims, db_.exec("SELECT id, seller FROM tasks WHERE state = 'claimed' AND claim_deadline < ?", {now()}));
  for (size_t i = 0; i < claims.rows.size(); ++i) {
    RETURN_IF_ERROR(inTransaction(db_, [&](Db& tx) -> Result<void> {
      ASSIGN_OR_RETURN(Rows u, tx.exec("UPDATE tasks SET state = 'open', seller = NULL, runner_key = NULL, key_wrap = NULL,"
                                       " claim_deadline = NULL, updated_at = ? WHERE id = ? AND state = 'claimed'"
                                       " AND claim_deadline < ?",
                                       {now(), claims.text(i, 0), now()}));
      if (u.affected == 1) RETURN_IF_ERROR(event(tx, "claim_expired", claims.text(i, 1), claims.text(i, 0), 0));
      n += u.affected;
      return {};
    }));
  }
  ASSIGN_OR_RETURN(Rows overdue, db_.exec("SELECT id, state FROM tasks WHERE state IN ('open', 'pending_approval') AND deadline < ?",
                                          {now()}));
  for (size_t i = 0; i < overdue.rows.size(); ++i) {
    const bool held = overdue.text(i, 1) == "open";
    RETURN_IF_ERROR(inTransaction(db_, [&](Db& tx) -> Result<void> {
      ASSIGN_OR_RETURN(Rows u, tx.exec(held ? "UPDATE tasks SET state = 'releasing', outcome = 'expired', updated_at = ?"
                                              " WHERE id = ? AND state = 'open'"
                                            : "UPDATE tasks SET state = 'expired', updated_at = ? WHERE id = ?"
                                              " AND state = 'pending_approval'",
                                       {now(), overdue.text(i, 0)}));
      if (u.affected == 1) RETURN_IF_ERROR(event(tx, "task_expired", "", overdue.text(i, 0), 0));
      n += u.affected;
      return {};
    }));
  }
  ASSIGN_OR_RETURN(int64_t recovered, recover());
  return n + recovered;
}

}  // namespace corral::market
