// SPDX-License-Identifier: Apache-2.0
// SQLite connection: open with durable settings, prepared statements, typed rows.
#include "daemon/sqlite.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/unique_fd.h"

namespace corral::daemon {

Sqlite::~Sqlite() {
  for (auto& [sql, st] : cache_) sqlite3_finalize(st);
  if (db_) sqlite3_close_v2(db_);
}

Error Sqlite::error(const std::string& what) const {
  return Error(Errc::kIo, "sqlite: " + what + ": " + (db_ ? sqlite3_errmsg(db_) : "out of memory"));
}

Result<Sqlite> Sqlite::open(const std::string& path) {
  // Create it 0600 ourselves: SQLite would honour the umask, and the file holds session secrets.
  {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return sysError("open " + path);
    ::fchmod(fd, 0600);
    ::close(fd);
  }
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW, nullptr);
  Sqlite db(raw);
  if (rc != SQLITE_OK) return db.error("open " + path);
  sqlite3_busy_timeout(raw, 10'000);
  RETURN_IF_ERROR(db.script("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"));
  ASSIGN_OR_RETURN(auto rows, db.query("PRAGMA integrity_check"));
  if (rows.size() != 1 || asText(rows[0][0]) != "ok")
    return Error(Errc::kIo, "sqlite: " + path + " fails integrity_check: " + (rows.empty() ? "" : asText(rows[0][0])));
  return db;
}

Result<std::vector<SqlRow>> Sqlite::query(const std::string& sql, const std::vector<SqlValue>& params) {
  std::lock_guard lock(cache_mu_);
  sqlite3_stmt* st = nullptr;
  bool cached = false;
  if (auto it = cache_.find(sql); it != cache_.end()) {
    st = it->second;
    cached = true;
  } else {
    if (sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &st, nullptr) != SQLITE_OK)
      return error("prepare");
    if (cache_.size() < kMaxCachedStatements) {
      cache_.emplace(sql, st);
      cached = true;
    }
  }
  // Reset on every way out, so a kept statement never holds a read transaction open between
  // calls (that would stop checkpoints and pin an old snapshot); one not kept is finalized.
  struct Release {
    sqlite3_stmt* s;
    bool keep;
    ~Release() {
      if (!keep) {
        sqlite3_finalize(s);
        return;
      }
      sqlite3_reset(s);
      sqlite3_clear_bindings(s);
    }
  } release{st, cached};
  for (size_t i = 0; i < params.size(); ++i) {
    const int idx = static_cast<int>(i + 1);
    int rc = SQLITE_OK;
    if (auto* n = std::get_if<int64_t>(&params[i])) rc = sqlite3_bind_int64(st, idx, *n);
    else if (auto* s = std::get_if<std::string>(&params[i]))
      rc = sqlite3_bind_text(st, idx, s->data(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
    else rc = sqlite3_bind_null(st, idx);
    if (rc != SQLITE_OK) return error("bind");
  }
  std::vector<SqlRow> rows;
  for (;;) {
    const int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return error("step");
    SqlRow row;
    for (int c = 0; c < sqlite3_column_count(st); ++c) {
      switch (sqlite3_column_type(st, c)) {
        case SQLITE_INTEGER: row.emplace_back(static_cast<int64_t>(sqlite3_column_int64(st, c))); break;
        case SQLITE_NULL: row.emplace_back(nullptr); break;
        default: {
          const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(st, c));
          row.emplace_back(std::string(text ? text : "", static_cast<size_t>(sqlite3_column_bytes(st, c))));
        }
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<void> Sqlite::exec(const std::string& sql, const std::vector<SqlValue>& params) {
  ASSIGN_OR_RETURN(auto rows, query(sql, params));
  (void)rows;
  return {};
}

Result<void> Sqlite::preallocateWal(const std::string& path, int64_t bytes) {
  int log_frames = -1, checkpointed = -1;
  if (sqlite3_wal_checkpoint_v2(db_, "main", SQLITE_CHECKPOINT_TRUNCATE, &log_frames, &checkpointed) != SQLITE_OK)
    return error("wal_checkpoint(TRUNCATE)");
  const std::string wal = path + "-wal";
  UniqueFd fd(::open(wal.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return sysError("open " + wal);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return sysError("stat " + wal);
  if (st.st_size != 0) return Error(Errc::kIo, wal + " still holds frames after the checkpoint (another connection reads it)");
  static const std::string zeros(size_t{1} << 16, '\0');
  for (int64_t at = 0; at < bytes; at += static_cast<int64_t>(zeros.size())) {
    if (::pwrite(fd.get(), zeros.data(), zeros.size(), at) != static_cast<ssize_t>(zeros.size())) {
      const Error e = sysError("write " + wal);
      // Back to empty; zeros a failed truncate leaves are no frames either (sqlite.h).
      [[maybe_unused]] const int truncated = ::ftruncate(fd.get(), 0);
      return e;
    }
  }
  if (::fdatasync(fd.get()) != 0) return sysError("fdatasync " + wal);
  return {};
}

Result<void> Sqlite::script(const std::string& sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string m = msg ? msg : "error";
    sqlite3_free(msg);
    return Error(Errc::kIo, "sqlite: " + m);
  }
  return {};
}

std::optional<int64_t> asInt(const SqlValue& v) {
  if (auto* n = std::get_if<int64_t>(&v)) return *n;
  return std::nullopt;
}

std::string asText(const SqlValue& v) {
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  if (auto* n = std::get_if<int64_t>(&v)) return std::to_string(*n);
  return "";
}

}  // namespace corral::daemon
