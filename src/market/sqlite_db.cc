// SPDX-License-Identifier: Apache-2.0
// SQLite behind Db: prepared statements per call, text results, busy and unique mapped.
#include "market/sqlite_db.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "base/unique_fd.h"
#include "market/market.h"

namespace corral::market {
namespace {

class SqliteDb final : public Db {
 public:
  explicit SqliteDb(sqlite3* db) : db_(db) {}
  ~SqliteDb() override { sqlite3_close_v2(db_); }
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  Dialect dialect() const override { return Dialect::kSqlite; }
  Result<void> begin() override {
    auto r = exec("BEGIN IMMEDIATE", {});
    if (!r) return r.error();
    return {};
  }

  Result<Rows> exec(std::string_view sql, const Params& params) override {
    // The crash test's kill point between any two statements (BEGIN and COMMIT included).
    failpoint("db.statement");
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
    if (rc != SQLITE_OK) return failure(rc, "prepare");
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt(raw, sqlite3_finalize);
    for (size_t i = 0; i < params.size(); ++i) {
      const int idx = static_cast<int>(i + 1);
      if (auto* n = std::get_if<int64_t>(&params[i])) {
        rc = sqlite3_bind_int64(raw, idx, *n);
      } else if (auto* s = std::get_if<std::string>(&params[i])) {
        rc = sqlite3_bind_text(raw, idx, s->data(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
      } else {
        rc = sqlite3_bind_null(raw, idx);
      }
      if (rc != SQLITE_OK) return failure(rc, "bind");
    }
    Rows out;
    const int cols = sqlite3_column_count(raw);
    while ((rc = sqlite3_step(raw)) == SQLITE_ROW) {
      auto& row = out.rows.emplace_back();
      for (int c = 0; c < cols; ++c) {
        const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(raw, c));
        if (t == nullptr) {
          row.emplace_back(std::nullopt);
        } else {
          row.emplace_back(std::string(t, static_cast<size_t>(sqlite3_column_bytes(raw, c))));
        }
      }
    }
    if (rc != SQLITE_DONE) return failure(rc, "step");
    out.affected = sqlite3_changes(db_);
    return out;
  }

 private:
  // The message names the engine's error class only: a statement's text or values could
  // hold task data, so neither goes into an error that may be logged.
  Error failure(int rc, const char* what) const {
    const int primary = rc & 0xff;
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return Error(kRetryCode, std::string("sqlite busy: ") + what);
    if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY)
      return Error(kUniqueCode, std::string("sqlite unique constraint: ") + what);
    return Error(Errc::kIo, std::string("sqlite ") + what + ": " + sqlite3_errstr(rc));
  }
  sqlite3* db_;
};

}  // namespace

Result<std::unique_ptr<Db>> openSqlite(const std::string& path) {
  // Create it 0600 ourselves: sqlite3_open_v2 would use the umask.
  {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!fd.valid()) return sysError("open " + path);
  }
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_close_v2(raw);
    return Error(Errc::kIo, "sqlite open " + path + ": " + sqlite3_errstr(rc));
  }
  auto db = std::make_unique<SqliteDb>(raw);
  sqlite3_busy_timeout(raw, 30000);
  sqlite3_extended_result_codes(raw, 1);
  // WAL: readers never block the writer; synchronous=FULL: a committed ledger transaction
  // survives power loss, not only kill -9.
  for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA foreign_keys=ON"}) {
    auto r = db->exec(pragma, {});
    if (!r) return r.error().wrap("sqlite " + path);
  }
  return std::unique_ptr<Db>(std::move(db));
}

}  // namespace corral::market
