// SPDX-License-Identifier: Apache-2.0
// Migrations: plain SQL that both SQLite and PostgreSQL accept, so one list serves both.
#include "market/schema.h"

#include <string>

namespace corral::market {
namespace {

// Invariant: a migration is never edited once released; changes go in a new entry.
// Types are the common subset: TEXT, BIGINT (SQLite's INTEGER affinity). Ciphertext is
// base64 TEXT and lives only in columns named *_ct or *_wrap.
constexpr const char* kMigration1[] = {
    "CREATE TABLE agents (id TEXT PRIMARY KEY, role TEXT NOT NULL, name TEXT NOT NULL,"
    " api_key_hash TEXT NOT NULL UNIQUE, public_key TEXT NOT NULL, spend_cap BIGINT NOT NULL DEFAULT 0,"
    " reserved BIGINT NOT NULL DEFAULT 0, spent BIGINT NOT NULL DEFAULT 0,"
    " approve_each BIGINT NOT NULL DEFAULT 0, strikes BIGINT NOT NULL DEFAULT 0,"
    " suspended BIGINT NOT NULL DEFAULT 0, created_at BIGINT NOT NULL,"
    " CHECK (reserved >= 0), CHECK (spent >= 0))",
    // Every X25519 key the server has seen: agents' keys and runner keys, in one UNIQUE
    // column, so "never an agent's key, never a key used before" is one constraint.
    "CREATE TABLE seen_keys (public_key TEXT PRIMARY KEY, kind TEXT NOT NULL, owner TEXT NOT NULL)",
    "CREATE TABLE tasks (id TEXT PRIMARY KEY, buyer TEXT NOT NULL, title TEXT NOT NULL,"
    " category TEXT NOT NULL, model TEXT NOT NULL, max_price BIGINT NOT NULL, deadline BIGINT NOT NULL,"
    " state TEXT NOT NULL, outcome TEXT NOT NULL DEFAULT '', body_ct TEXT NOT NULL,"
    " seller TEXT, runner_key TEXT, claim_deadline BIGINT, key_wrap TEXT,"
    " result_ct TEXT, result_key_wrap TEXT, judge TEXT, judge_key TEXT, judge_wrap TEXT,"
    " verdict TEXT, reason TEXT, price BIGINT NOT NULL DEFAULT 0, fee BIGINT NOT NULL DEFAULT 0,"
    " created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL)",
    "CREATE INDEX tasks_state ON tasks (state)",
    "CREATE TABLE accounts (id TEXT PRIMARY KEY, balance BIGINT NOT NULL)",
    // id is the movement's idempotency key: a second attempt inserts nothing.
    "CREATE TABLE ledger_txns (id TEXT PRIMARY KEY, kind TEXT NOT NULL, ref TEXT NOT NULL, created_at BIGINT NOT NULL)",
    "CREATE TABLE ledger_entries (txn TEXT NOT NULL, seq BIGINT NOT NULL, account TEXT NOT NULL,"
    " amount BIGINT NOT NULL, PRIMARY KEY (txn, seq))",
    // Ids, kinds and counts only: never a title's neighbour, a body, a key or a text.
    "CREATE TABLE events (id TEXT PRIMARY KEY, at BIGINT NOT NULL, kind TEXT NOT NULL,"
    " agent TEXT NOT NULL, task TEXT NOT NULL, amount BIGINT NOT NULL)",
    "CREATE TABLE appeals (id TEXT PRIMARY KEY, seller TEXT NOT NULL, state TEXT NOT NULL, created_at BIGINT NOT NULL)",
    "CREATE TABLE rate_windows (agent TEXT NOT NULL, window_start BIGINT NOT NULL, hits BIGINT NOT NULL,"
    " PRIMARY KEY (agent, window_start))",
};

// The audit trail (market/audit_chain.h): each event gets its position in one hash chain,
// the hash it chains after, and its own; audit_head holds the count and the last hash, and
// how many events a schema-1 database already had (they stay unchained).
constexpr const char* kMigration2[] = {
    "ALTER TABLE events ADD COLUMN seq BIGINT",
    "ALTER TABLE events ADD COLUMN prev TEXT",
    "ALTER TABLE events ADD COLUMN hash TEXT",
    "CREATE UNIQUE INDEX events_seq ON events (seq)",
    "CREATE TABLE audit_head (id BIGINT PRIMARY KEY, entries BIGINT NOT NULL, head TEXT NOT NULL,"
    " unchained BIGINT NOT NULL)",
    "INSERT INTO audit_head (id, entries, head, unchained) SELECT 1, 0,"
    " '0000000000000000000000000000000000000000000000000000000000000000', COUNT(*) FROM events",
};

struct Migration {
  int version;
  const char* const* statements;
  size_t count;
};
constexpr Migration kMigrations[] = {{1, kMigration1, std::size(kMigration1)},
                                     {2, kMigration2, std::size(kMigration2)}};
static_assert(std::size(kMigrations) == kSchemaVersion);

}  // namespace

Result<int> migrate(Db& db) {
  int reached = 0;
  auto r = inTransaction(db, [&](Db& tx) -> Result<void> {
    if (tx.dialect() == Dialect::kPostgres) {
      // Two servers starting on one database: the second waits here, then sees version 1.
      RETURN_IF_ERROR(tx.exec("SELECT pg_advisory_xact_lock(72210001)"));
    }
    RETURN_IF_ERROR(tx.exec("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)"));
    ASSIGN_OR_RETURN(Rows v, tx.exec("SELECT COALESCE(MAX(version), 0) FROM schema_version"));
    const int current = static_cast<int>(v.num(0, 0));
    if (current > kSchemaVersion)
      return Error(Errc::kUnsupported, "database schema version " + std::to_string(current) +
                                           " is newer than this corral (" + std::to_string(kSchemaVersion) + ")");
    for (const Migration& m : kMigrations) {
      if (m.version <= current) continue;
      for (size_t i = 0; i < m.count; ++i) RETURN_IF_ERROR(tx.exec(m.statements[i]));
      RETURN_IF_ERROR(tx.exec("INSERT INTO schema_version (version) VALUES (?)", {int64_t{m.version}}));
    }
    reached = kSchemaVersion;
    return {};
  });
  if (!r) return r.error().wrap("migrate");
  return reached;
}

}  // namespace corral::market
