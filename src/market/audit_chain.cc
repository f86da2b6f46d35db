// SPDX-License-Identifier: Apache-2.0
// The market's hash-chained audit trail over the events table: append inside a transaction, verify.
#include "market/audit_chain.h"

#include <nlohmann/json.hpp>

#include "audit/sha256.h"
#include "audit/trace_chain.h"

namespace corral::market::audit_chain {

Result<std::string> line(uint64_t seq, const std::string& prev, const Event& e) {
  corral::audit::ChainState state;
  state.count = seq;
  state.head = prev;
  const nlohmann::json data = {{"agent", e.agent}, {"amount", e.amount}, {"event", e.id}, {"task", e.task}};
  return corral::audit::encodeTraceLine(state, e.at * 1000, e.kind, data);
}

Result<void> append(Db& tx, const Event& e) {
  // The increment locks the head row until commit; RETURNING gives the new count and the
  // head as it stood, the link this entry chains after.
  ASSIGN_OR_RETURN(Rows h, tx.exec("UPDATE audit_head SET entries = entries + 1 WHERE id = 1 RETURNING entries, head"));
  if (h.rows.size() != 1) return Error(Errc::kIo, "audit_head row missing");
  const int64_t seq = h.num(0, 0) - 1;
  const std::string prev = h.text(0, 1);
  ASSIGN_OR_RETURN(std::string l, line(static_cast<uint64_t>(seq), prev, e));
  const std::string hash = corral::audit::sha256Hex(l);
  RETURN_IF_ERROR(tx.exec("INSERT INTO events (id, at, kind, agent, task, amount, seq, prev, hash)"
                          " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          {e.id, e.at, e.kind, e.agent, e.task, e.amount, seq, prev, hash}));
  RETURN_IF_ERROR(tx.exec("UPDATE audit_head SET head = ? WHERE id = 1", {hash}));
  return {};
}

namespace {

Report broken(Report r, std::string why) {
  r.ok = false;
  r.failure = std::move(why);
  return r;
}

}  // namespace

Result<Report> verify(Db& db, const std::optional<std::string>& trusted_head) {
  Report rep;
  rep.head = std::string(corral::audit::kZeroHash);
  ASSIGN_OR_RETURN(Rows h, db.exec("SELECT entries, head, unchained FROM audit_head WHERE id = 1"));
  if (h.rows.size() != 1) return broken(rep, "audit head row missing");
  const int64_t want_entries = h.num(0, 0);
  const std::string want_head = h.text(0, 1);
  rep.unchained = h.num(0, 2);
  ASSIGN_OR_RETURN(Rows nulls, db.exec("SELECT COUNT(*) FROM events WHERE seq IS NULL"));
  if (nulls.num(0, 0) != rep.unchained)
    return broken(rep, "audit: " + std::to_string(nulls.num(0, 0)) + " events without a chain position, the migration found " +
                           std::to_string(rep.unchained) + " (rows inserted outside the chain)");
  if (trusted_head && *trusted_head == rep.head) rep.trusted_head_found = true;
  // Pages by position: a large trail is never read whole.
  constexpr int64_t kPage = 2000;
  int64_t expect = 0;
  for (;;) {
    ASSIGN_OR_RETURN(Rows page, db.exec("SELECT seq, prev, hash, id, at, kind, agent, task, amount FROM events"
                                        " WHERE seq IS NOT NULL AND seq >= ? ORDER BY seq LIMIT ?",
                                        {expect, kPage}));
    for (size_t i = 0; i < page.rows.size(); ++i, ++expect) {
      const std::string where = "audit seq " + std::to_string(expect) + ": ";
      if (page.num(i, 0) != expect || page.text(i, 0) != std::to_string(expect))
        return broken(rep, where + "missing (the next link is seq " + page.text(i, 0) + ")");
      if (page.text(i, 1) != rep.head)
        return broken(rep, where + "prev does not match seq " + std::to_string(expect - 1));
      const Event e{page.text(i, 3), page.num(i, 4), page.text(i, 5), page.text(i, 6), page.text(i, 7), page.num(i, 8)};
      auto l = line(static_cast<uint64_t>(expect), rep.head, e);
      if (!l) return broken(rep, where + "the row cannot be encoded: " + l.error().context());
      const std::string hash = corral::audit::sha256Hex(*l);
      if (hash != page.text(i, 2)) return broken(rep, where + "the row does not match its hash (edited)");
      rep.head = hash;
      rep.entries = expect + 1;
      if (trusted_head && *trusted_head == hash) rep.trusted_head_found = true;
    }
    if (static_cast<int64_t>(page.rows.size()) < kPage) break;
  }
  if (rep.entries != want_entries)
    return broken(rep, "audit head counts " + std::to_string(want_entries) + " entries, the chain has " +
                           std::to_string(rep.entries) + " (links removed at the end)");
  if (rep.head != want_head) return broken(rep, "audit head does not match the last link");
  if (trusted_head && !rep.trusted_head_found)
    return broken(rep, "the trusted head is not a link of the chain (history before it was rewritten)");
  rep.ok = true;
  return rep;
}

}  // namespace corral::market::audit_chain
