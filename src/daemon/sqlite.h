// SPDX-License-Identifier: Apache-2.0
// A small owner of one SQLite connection and its statements: errors as values, nothing thrown.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/result.h"

namespace corral::daemon {

using SqlValue = std::variant<std::nullptr_t, int64_t, std::string>;
using SqlRow = std::vector<SqlValue>;

class Sqlite {
 public:
  // Opens (creating) path with WAL journaling, synchronous=FULL (a state change is on disk
  // when the call returns) and foreign keys on; then runs integrity_check and refuses a file
  // that fails it.
  static Result<Sqlite> open(const std::string& path);
  Sqlite(Sqlite&& o) noexcept : db_(o.db_) { o.db_ = nullptr; }
  Sqlite& operator=(Sqlite&&) = delete;
  Sqlite(const Sqlite&) = delete;
  ~Sqlite();

  // One statement with ? parameters; the rows it returns.
  Result<std::vector<SqlRow>> query(const std::string& sql, const std::vector<SqlValue>& params = {});
  Result<void> exec(const std::string& sql, const std::vector<SqlValue>& params = {});
  // Several statements, no parameters (migrations).
  Result<void> script(const std::string& sql);
  int64_t changes() const { return sqlite3_changes64(db_); }

 private:
  explicit Sqlite(sqlite3* db) : db_(db) {}
  Error error(const std::string& what) const;
  sqlite3* db_;
};

std::optional<int64_t> asInt(const SqlValue& v);
std::string asText(const SqlValue& v);  // "" for NULL

}  // namespace corral::daemon
