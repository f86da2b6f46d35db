// SPDX-License-Identifier: Apache-2.0
// Db: the one SQL interface the market uses, over SQLite (WAL) and PostgreSQL (libpq).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.h"

namespace corral::market {

using Param = std::variant<std::nullptr_t, int64_t, std::string>;
using Params = std::vector<Param>;

// Every value comes back as text (NULL as nullopt): both engines can give text, and the
// callers convert the few integers they read.
struct Rows {
  std::vector<std::vector<std::optional<std::string>>> rows;
  int64_t affected = 0;  // rows changed by INSERT/UPDATE/DELETE
  bool empty() const { return rows.empty(); }
  std::string text(size_t r, size_t c) const;  // "" for NULL
  int64_t num(size_t r, size_t c) const;       // 0 for NULL or not a number
};

enum class Dialect { kSqlite, kPostgres };

// A statement's failure that a retry of the whole transaction can cure: SQLite's BUSY or
// PostgreSQL's serialization failure and deadlock. Carried as Error code kRetry.
inline constexpr int kRetryCode = 10100;
// A UNIQUE or PRIMARY KEY violation (an idempotency key or runner key seen before).
inline constexpr int kUniqueCode = 10101;

class Db {
 public:
  virtual ~Db() = default;
  // SQL uses ? placeholders in both dialects; the PostgreSQL side numbers them.
  virtual Result<Rows> exec(std::string_view sql, const Params& params = {}) = 0;
  virtual Dialect dialect() const = 0;
  // SQLite: BEGIN IMMEDIATE (writers serialize at begin). PostgreSQL: READ COMMITTED, where
  // every money rule is one conditional UPDATE that re-checks its WHERE on the locked row.
  virtual Result<void> begin() = 0;
};

// "sqlite:PATH" or "postgresql://..." (also "postgres://").
Result<std::unique_ptr<Db>> openDb(const std::string& url);

// Runs fn inside BEGIN..COMMIT; rolls back on error, and retries (up to 50 times) when the
// engine reports a conflict that a retry can cure.
Result<void> inTransaction(Db& db, const std::function<Result<void>(Db&)>& fn);

}  // namespace corral::market
