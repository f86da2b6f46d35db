// SPDX-License-Identifier: Apache-2.0
// A small owner of one SQLite connection and its statements: errors as values, nothing thrown.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <mutex>
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
  Sqlite(Sqlite&& o) noexcept : db_(o.db_), cache_(std::move(o.cache_)) { o.db_ = nullptr; }
  Sqlite& operator=(Sqlite&&) = delete;
  Sqlite(const Sqlite&) = delete;
  ~Sqlite();

  // One statement with ? parameters; the rows it returns. The statement is compiled once per
  // distinct text and kept (up to kMaxCachedStatements): compiling the claim's UPDATE took
  // 85 us of a warm create's 1.1 ms.
  Result<std::vector<SqlRow>> query(const std::string& sql, const std::vector<SqlValue>& params = {});
  Result<void> exec(const std::string& sql, const std::vector<SqlValue>& params = {});
  // The write-ahead log emptied into the database and its file then written out to `bytes`
  // of zeros, once at start (no other connection may write then). Commits then overwrite
  // blocks the file already has instead of growing it; a growing file makes each commit's
  // fdatasync also commit the file system's journal (its new size and blocks): 0.4-0.5 ms a
  // commit on this host's disk against 0.3 ms. SQLite reads frames only up to the first whose
  // salt and checksum fail, so the zeros are no frames. A failure here changes nothing else:
  // the log only grows as it did before.
  Result<void> preallocateWal(const std::string& path, int64_t bytes);
  // Several statements, no parameters (migrations).
  Result<void> script(const std::string& sql);
  int64_t changes() const { return sqlite3_changes64(db_); }

 private:
  static constexpr size_t kMaxCachedStatements = 128;  // texts built at run time are not all kept
  explicit Sqlite(sqlite3* db) : db_(db) {}
  Error error(const std::string& what) const;
  sqlite3* db_;
  std::mutex cache_mu_;  // a statement is stepped by one thread at a time: held for a whole query
  std::map<std::string, sqlite3_stmt*, std::less<>> cache_;
};

std::optional<int64_t> asInt(const SqlValue& v);
std::string asText(const SqlValue& v);  // "" for NULL

}  // namespace corral::daemon
