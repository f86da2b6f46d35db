// SPDX-License-Identifier: Apache-2.0
// Ledger movements as rows: one ledger_txns row, its entries, and the accounts' balances,
// all in the caller's database transaction.
#include "market/ledger.h"

#include <map>

namespace corral::market::ledger {

std::string buyerAvailable(const std::string& agent) { return "buyer:" + agent + ":available"; }
std::string buyerHeld(const std::string& agent) { return "buyer:" + agent + ":held"; }
std::string sellerPayable(const std::string& agent) { return "seller:" + agent + ":payable"; }

Result<bool> post(Db& tx, const std::string& key, const std::string& kind, const std::string& ref,
                  const std::vector<Entry>& entries, int64_t now) {
  int64_t sum = 0;
  for (const Entry& e : entries) sum += e.amount;
  if (entries.size() < 2 || sum != 0) return Error(Errc::kInvalidArgument, "ledger: unbalanced movement " + kind);
  // The idempotency key is the primary key: a replay (recovery after kill -9, a retried
  // request) inserts nothing and so moves nothing.
  ASSIGN_OR_RETURN(Rows ins, tx.exec("INSERT INTO ledger_txns (id, kind, ref, created_at) VALUES (?, ?, ?, ?)"
                                     " ON CONFLICT (id) DO NOTHING",
                                     {key, kind, ref, now}));
  if (ins.affected == 0) return false;
  int64_t seq = 0;
  for (const Entry& e : entries) {
    RETURN_IF_ERROR(tx.exec("INSERT INTO ledger_entries (txn, seq, account, amount) VALUES (?, ?, ?, ?)",
                            {key, seq++, e.account, e.amount}));
    RETURN_IF_ERROR(tx.exec("INSERT INTO accounts (id, balance) VALUES (?, 0) ON CONFLICT (id) DO NOTHING", {e.account}));
    // One conditional statement: the balance test and the change cannot be split by a
    // concurrent movement.
    const bool may_go_negative = e.account == kExternalFunding;
    ASSIGN_OR_RETURN(Rows upd, tx.exec(may_go_negative
                                           ? "UPDATE accounts SET balance = balance + ? WHERE id = ?"
                                           : "UPDATE accounts SET balance = balance + ? WHERE id = ? AND balance + ? >= 0",
                                       may_go_negative ? Params{e.amount, e.account}
                                                       : Params{e.amount, e.account, e.amount}));
    if (upd.affected != 1) return Error(Errc::kRefused, "ledger: insufficient balance for " + kind);
  }
  return true;
}

Result<bool> applied(Db& db, const std::string& key) {
  ASSIGN_OR_RETURN(Rows r, db.exec("SELECT 1 FROM ledger_txns WHERE id = ?", {key}));
  return !r.empty();
}

Result<CheckReport> check(Db& db) {
  CheckReport rep;
  ASSIGN_OR_RETURN(Rows counts, db.exec("SELECT (SELECT COUNT(*) FROM ledger_txns), (SELECT COUNT(*) FROM ledger_entries),"
                                        " (SELECT COUNT(*) FROM accounts)"));
  rep.transactions = counts.num(0, 0);
  rep.entries = counts.num(0, 1);
  rep.accounts = counts.num(0, 2);
  ASSIGN_OR_RETURN(Rows unbalanced, db.exec("SELECT t.id, COALESCE(SUM(e.amount), 0), COUNT(e.seq) FROM ledger_txns t"
                                            " LEFT JOIN ledger_entries e ON e.txn = t.id GROUP BY t.id"
                                            " HAVING COALESCE(SUM(e.amount), 0) <> 0 OR COUNT(e.seq) < 2"));
  for (size_t i = 0; i < unbalanced.rows.size(); ++i)
    rep.problems.push_back("transaction " + unbalanced.text(i, 0) + " does not balance (sum " + unbalanced.text(i, 1) +
                           ", " + unbalanced.text(i, 2) + " entries)");
  ASSIGN_OR_RETURN(Rows orphans, db.exec("SELECT e.txn, e.seq FROM ledger_entries e LEFT JOIN ledger_txns t ON t.id = e.txn"
                                         " WHERE t.id IS NULL"));
  for (size_t i = 0; i < orphans.rows.size(); ++i)
    rep.problems.push_back("entry " + orphans.text(i, 0) + "#" + orphans.text(i, 1) + " has no transaction");
  ASSIGN_OR_RETURN(Rows sums, db.exec("SELECT account, SUM(amount) FROM ledger_entries GROUP BY account"));
  std::map<std::string, int64_t> expected;
  for (size_t i = 0; i < sums.rows.size(); ++i) expected[sums.text(i, 0)] = sums.num(i, 1);
  ASSIGN_OR_RETURN(Rows accts, db.exec("SELECT id, balance FROM accounts"));
  for (size_t i = 0; i < accts.rows.size(); ++i) {
    const std::string id = accts.text(i, 0);
    const int64_t bal = accts.num(i, 1);
    const auto it = expected.find(id);
    const int64_t want = it == expected.end() ? 0 : it->second;
    if (bal != want)
      rep.problems.push_back("account " + id + " balance " + std::to_string(bal) + " != sum of entries " + std::to_string(want));
    if (bal < 0 && id != kExternalFunding) rep.problems.push_back("account " + id + " is negative");
    if (it != expected.end()) expected.erase(it);
  }
  for (const auto& [id, sum] : expected)
    rep.problems.push_back("entries for account " + id + " (sum " + std::to_string(sum) + ") but no account row");
  return rep;
}

Result<std::vector<AccountBalance>> balances(Db& db) {
  ASSIGN_OR_RETURN(Rows r, db.exec("SELECT id, balance FROM accounts ORDER BY id"));
  std::vector<AccountBalance> out;
  for (size_t i = 0; i < r.rows.size(); ++i) out.push_back({r.text(i, 0), r.num(i, 1)});
  return out;
}

Result<int64_t> balance(Db& db, const std::string& account) {
  ASSIGN_OR_RETURN(Rows r, db.exec("SELECT balance FROM accounts WHERE id = ?", {account}));
  return r.empty() ? 0 : r.num(0, 0);
}

}  // namespace corral::market::ledger
