// SPDX-License-Identifier: Apache-2.0
// openDb (the URL decides the engine), the row accessors and the transaction retry loop.
#include "market/db.h"

#include <charconv>

#include "market/pg_db.h"
#include "market/sqlite_db.h"

namespace corral::market {

std::string Rows::text(size_t r, size_t c) const {
  if (r >= rows.size() || c >= rows[r].size() || !rows[r][c]) return "";
  return *rows[r][c];
}

int64_t Rows::num(size_t r, size_t c) const {
  const std::string t = text(r, c);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size()) return 0;
  return v;
}

Result<std::unique_ptr<Db>> openDb(const std::string& url) {
  if (url.rfind("sqlite:", 0) == 0) {
    const std::string path = url.substr(7);
    if (path.empty()) return Error(Errc::kInvalidArgument, "--db sqlite: needs a path");
    return openSqlite(path);
  }
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0) return openPostgres(url);
  return Error(Errc::kInvalidArgument, "--db must be sqlite:PATH or postgresql://...");
}

Result<void> inTransaction(Db& db, const std::function<Result<void>(Db&)>& fn) {
  for (int attempt = 0;; ++attempt) {
    auto begun = db.begin();
    Result<void> r = begun.ok() ? fn(db) : begun;
    if (r.ok()) {
      auto committed = db.exec("COMMIT");
      if (committed.ok()) return {};
      r = committed.error();
    }
    (void)db.exec("ROLLBACK");
    if (r.error().code() != kRetryCode || attempt >= 50) return r.error();
  }
}

}  // namespace corral::market
