// SPDX-License-Identifier: Apache-2.0
// The market's audit trail: every event row is a link of one SHA-256 hash chain, in the trace line format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "market/db.h"

namespace corral::market::audit_chain {

// One event, as the events table holds it: ids, a kind and a count, nothing else.
struct Event {
  std::string id;
  int64_t at = 0;  // unix seconds
  std::string kind, agent, task;
  int64_t amount = 0;
};

// The line that entry `seq` chained after `prev` hashes to: the sandbox trace's canonical
// line (docs/audit-format.md) with type = kind, ts_ms = at * 1000 and
// data = {"agent", "amount", "event", "task"}, so the same few lines of hashlib verify both.
Result<std::string> line(uint64_t seq, const std::string& prev, const Event& e);

// Appends e inside the caller's transaction: takes the next position from audit_head (a
// row lock on PostgreSQL, the write lock SQLite's BEGIN IMMEDIATE already holds), so
// concurrent transactions, in one process or several, chain one after another.
Result<void> append(Db& tx, const Event& e);

struct Report {
  bool ok = false;
  std::string failure;      // the first problem: "audit seq 7: the row does not match its hash"
  int64_t entries = 0;      // chained events checked
  std::string head;         // hash of the last one (64 zeros when none)
  int64_t unchained = 0;    // events from before the chain existed (schema 1 databases)
  bool trusted_head_found = false;
};
// Walks the chain from seq 0: contiguous positions, each prev the previous hash, each hash
// the SHA-256 of the line recomputed from the row, the head row equal to the last link, and
// no unchained event beyond those the migration found. With trusted_head (a head saved
// earlier with `audit head`), that hash must still be a link: history before it is intact.
Result<Report> verify(Db& db, const std::optional<std::string>& trusted_head = std::nullopt);

}  // namespace corral::market::audit_chain
