// SPDX-License-Identifier: Apache-2.0
// Sessions and commands in SQLite, with a versioned schema.
#include "daemon/store.h"

#include <ctime>

#include "base/log.h"

namespace corral::daemon {
namespace {

// Migration N takes the schema from version N-1 to N. Append; never edit a shipped one.
constexpr const char* kMigrations[] = {
    // 1: sessions and their commands.
    "CREATE TABLE sessions(id TEXT PRIMARY KEY, name TEXT NOT NULL, owner_uid INTEGER NOT NULL,"
    " state TEXT NOT NULL, secret TEXT NOT NULL, spec TEXT NOT NULL, shim_pid INTEGER NOT NULL DEFAULT 0,"
    " shim_start INTEGER NOT NULL DEFAULT 0, init_pid INTEGER NOT NULL DEFAULT 0, init_start INTEGER NOT NULL DEFAULT 0,"
    " created_at INTEGER NOT NULL, next_cmd INTEGER NOT NULL DEFAULT 1);"
    "CREATE TABLE commands(session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, cmd INTEGER NOT NULL,"
    " state TEXT NOT NULL, argc INTEGER NOT NULL, exit_code INTEGER, report TEXT NOT NULL DEFAULT '',"
    " created_at INTEGER NOT NULL, PRIMARY KEY(session_id, cmd));",
    // 2: a session's expiry (--ttl), unix milliseconds; 0: none.
    "ALTER TABLE sessions ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0;",
    // 3: credential records (metadata; values are sealed files) and the leases sessions hold.
    "CREATE TABLE credentials(owner_uid INTEGER NOT NULL, name TEXT NOT NULL, host TEXT NOT NULL, header TEXT NOT NULL,"
    " format TEXT NOT NULL, env TEXT NOT NULL, fingerprint TEXT NOT NULL, created_at INTEGER NOT NULL,"
    " rotated_at INTEGER NOT NULL DEFAULT 0, last_used_ms INTEGER NOT NULL DEFAULT 0, use_count INTEGER NOT NULL DEFAULT 0,"
    " version INTEGER NOT NULL DEFAULT 1, PRIMARY KEY(owner_uid, name));"
    "CREATE TABLE session_credentials(session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
    " owner_uid INTEGER NOT NULL, name TEXT NOT NULL, version INTEGER NOT NULL, seen_uses INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY(session_id, owner_uid, name));",
    // 4: startup profiles, every version kept (a session records which one it was made from).
    "CREATE TABLE profiles(owner_uid INTEGER NOT NULL, name TEXT NOT NULL, version INTEGER NOT NULL, doc TEXT NOT NULL,"
    " created_at INTEGER NOT NULL, PRIMARY KEY(owner_uid, name, version));",
    // 5: warm pool members are session rows with their pool's key until a claim clears it.
    "ALTER TABLE sessions ADD COLUMN pool TEXT NOT NULL DEFAULT '';",
    // 6: audit lines committed with the state change they record, until the log has synced them.
    "CREATE TABLE audit_outbox(seq INTEGER PRIMARY KEY, line TEXT NOT NULL);",
};

int64_t now() { return static_cast<int64_t>(::time(nullptr)); }

SessionRow sessionOf(const SqlRow& r) {
  SessionRow s;
  s.id = asText(r[0]);
  s.name = asText(r[1]);
  s.owner_uid = asInt(r[2]).value_or(-1);
  s.state = asText(r[3]);
  s.secret = asText(r[4]);
  s.spec = asText(r[5]);
  s.shim_pid = asInt(r[6]).value_or(0);
  s.shim_start = asInt(r[7]).value_or(0);
  s.init_pid = asInt(r[8]).value_or(0);
  s.init_start = asInt(r[9]).value_or(0);
  s.created_at = asInt(r[10]).value_or(0);
  s.expires_at = asInt(r[11]).value_or(0);
  s.pool = asText(r[12]);
  return s;
}
constexpr const char* kSessionCols =
    "SELECT id, name, owner_uid, state, secret, spec, shim_pid, shim_start, init_pid, init_start, created_at, expires_at,"
    " pool FROM sessions";

CommandRow commandOf(const SqlRow& r) {
  CommandRow c;
  c.session_id = asText(r[0]);
  c.cmd = asInt(r[1]).value_or(0);
  c.state = asText(r[2]);
  c.argc = asInt(r[3]).value_or(0);
  c.exit_code = asInt(r[4]);
  c.report = asText(r[5]);
  c.created_at = asInt(r[6]).value_or(0);
  return c;
}
constexpr const char* kCommandCols = "SELECT session_id, cmd, state, argc, exit_code, report, created_at FROM commands";

}  // namespace

Result<Store> Store::open(const std::string& path) {
  ASSIGN_OR_RETURN(Sqlite db, Sqlite::open(path));
  Store s(std::move(db));
  RETURN_IF_ERROR(s.migrate());
  // About one autocheckpoint's worth of frames (1000 pages of 4 KiB and their headers), so the
  // log's file seldom grows past what was written here.
  if (auto pre = s.db_.preallocateWal(path, int64_t{5} << 20); !pre)
    log::warn("state_wal_preallocate_failed", "reason=" + log::value(pre.error().message()));
  return s;
}

Result<void> Store::migrate() {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(auto rows, db_.query("PRAGMA user_version"));
  const int64_t have = rows.empty() ? 0 : asInt(rows[0][0]).value_or(0);
  constexpr int64_t want = static_cast<int64_t>(std::size(kMigrations));
  static_assert(std::size(kMigrations) == kSchemaVersion);
  if (have > want)
    return Error(Errc::kUnsupported, "state database has schema version " + std::to_string(have) +
                                         ", newer than this corral's " + std::to_string(want));
  for (int64_t v = have; v < want; ++v) {
    // Each step and its version bump commit together: a crash leaves the old or the new schema.
    RETURN_IF_ERROR(db_.script(std::string("BEGIN IMMEDIATE;") + kMigrations[v] + "PRAGMA user_version=" +
                               std::to_string(v + 1) + ";COMMIT;"));
  }
  return {};
}

Result<int> Store::schemaVersion() {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(auto rows, db_.query("PRAGMA user_version"));
  return static_cast<int>(rows.empty() ? 0 : asInt(rows[0][0]).value_or(0));
}

Result<void> Store::insertSession(const SessionRow& s) {
  std::lock_guard lock(mu_);
  return db_.exec("INSERT INTO sessions(id, name, owner_uid, state, secret, spec, created_at, expires_at, pool)"
                  " VALUES(?,?,?,?,?,?,?,?,?)",
                  {s.id, s.name, s.owner_uid, s.state, s.secret, s.spec, now(), s.expires_at, s.pool});
}

Result<void> Store::setSessionState(const std::string& id, const std::string& state) {
  std::lock_guard lock(mu_);
  return db_.exec("UPDATE sessions SET state=? WHERE id=?", {state, id});
}

Result<void> Store::setSessionProcesses(const std::string& id, int64_t shim_pid, int64_t shim_start, int64_t init_pid,
                                        int64_t init_start) {
  std::lock_guard lock(mu_);
  return db_.exec("UPDATE sessions SET shim_pid=?, shim_start=?, init_pid=?, init_start=? WHERE id=?",
                  {shim_pid, shim_start, init_pid, init_start, id});
}

Result<std::vector<SessionRow>> Store::sessions() {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(auto rows, db_.query(std::string(kSessionCols) + " ORDER BY created_at, id"));
  std::vector<SessionRow> out;
  out.reserve(rows.size());
  for (const SqlRow& r : rows) out.push_back(sessionOf(r));
  return out;
}

Result<std::optional<SessionRow>> Store::session(const std::string& id) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(auto rows, db_.query(std::string(kSessionCols) + " WHERE id=?", {id}));
  if (rows.empty()) return std::optional<SessionRow>();
  return std::optional<SessionRow>(sessionOf(rows[0]));
}

Result<void> Store::deleteSession(const std::string& id) {
  std::lock_guard lock(mu_);
  return db_.exec("DELETE FROM sessions WHERE id=?", {id});
}

Result<bool> Store::markRecovering(const std::string& id, const std::string& secret) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(db_.script("BEGIN IMMEDIATE"));
  auto fail = [&](Error e) -> Result<bool> {
    (void)db_.script("ROLLBACK");
    return e;
  };
  if (auto r = db_.exec("UPDATE sessions SET state='recovering', secret=?, shim_pid=0, shim_start=0, init_pid=0, init_start=0"
                        " WHERE id=? AND state='lost'",
                        {secret, id});
      !r)
    return fail(r.error());
  const bool marked = db_.changes() == 1;
  if (auto r = db_.exec("UPDATE commands SET state='lost' WHERE session_id=? AND state IN ('starting', 'running')", {id}); !r)
    return fail(r.error());
  RETURN_IF_ERROR(db_.script("COMMIT"));
  return marked;
}

Result<int64_t> Store::addCommand(const std::string& session_id, int64_t argc) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(db_.script("BEGIN IMMEDIATE"));
  auto rows = db_.query("SELECT next_cmd FROM sessions WHERE id=?", {session_id});
  auto fail = [&](Error e) -> Result<int64_t> {
    (void)db_.script("ROLLBACK");
    return e;
  };
  if (!rows) return fail(rows.error());
  if (rows->empty()) return fail(Error(Errc::kInvalidArgument, "no such session"));
  const int64_t cmd = asInt((*rows)[0][0]).value_or(1);
  if (auto r = db_.exec("UPDATE sessions SET next_cmd=? WHERE id=?", {cmd + 1, session_id}); !r) return fail(r.error());
  if (auto r = db_.exec("INSERT INTO commands(session_id, cmd, state, argc, created_at) VALUES(?,?,?,?,?)",
                        {session_id, cmd, std::string("starting"), argc, now()});
      !r)
    return fail(r.error());
  RETURN_IF_ERROR(db_.script("COMMIT"));
  return cmd;
}

Result<void> Store::setCommand(const std::string& session_id, int64_t cmd, const std::string& state,
                               std::optional<int64_t> exit_code, const std::string& report) {
  std::lock_guard lock(mu_);
  // "running" is the one mark reconcile can rebuild (a command whose spool directory exists
  // was handed to the shim), so it is committed without waiting for the disk: a kill -9 keeps
  // it (the WAL is written), a power cut can only take it back to "starting". Every command
  // start paid a WAL fsync for it, half a millisecond to several on this host's disk.
  if (state == "running" && !exit_code) {
    RETURN_IF_ERROR(db_.script("PRAGMA synchronous=NORMAL"));
    auto r = db_.exec("UPDATE commands SET state=?, exit_code=NULL, report=? WHERE session_id=? AND cmd=?",
                      {state, report, session_id, cmd});
    auto back = db_.script("PRAGMA synchronous=FULL");
    if (!r) return r;
    return back;
  }
  // Two statements rather than one with a NULL-or-integer value: GCC 12 misreads the variant.
  if (exit_code)
    return db_.exec("UPDATE commands SET state=?, exit_code=?, report=? WHERE session_id=? AND cmd=?",
                    {state, *exit_code, report, session_id, cmd});
  return db_.exec("UPDATE commands SET state=?, exit_code=NULL, report=? WHERE session_id=? AND cmd=?",
                  {state, report, session_id, cmd});
}

Result<bool> Store::finishCommand(const std::string& session_id, int64_t cmd, std::optional<int64_t> exit_code,
                                  const std::string& report) {
  std::lock_guard lock(mu_);
  constexpr const char* kOnce = " WHERE session_id=? AND cmd=? AND state IN ('starting', 'running')";
  if (exit_code) {
    RETURN_IF_ERROR(db_.exec(std::string("UPDATE commands SET state='exited', exit_code=?, report=?") + kOnce,
                             {*exit_code, report, session_id, cmd}));
  } else {
    RETURN_IF_ERROR(db_.exec(std::string("UPDATE commands SET state='exited', exit_code=NULL, report=?") + kOnce, {report, session_id, cmd}));
  }
  return db_.changes() == 1;
}

Result<std::vector<CommandRow>> Store::commands(const std::string& session_id) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(auto rows, db_.query(std::string(kCommandCols) + " WHERE session_id=? ORDER BY cmd", {session_id}));
  std::vector<CommandRow> out;
  out.reserve(rows.size());
  for (const SqlRow& r : rows) out.push_back(commandOf(r));
  return out;
}

Result<std::optional<CommandRow>> Store::command(const std::string& session_id, int64_t cmd) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(auto rows, db_.query(std::string(kCommandCols) + " WHERE session_id=? AND cmd=?", {session_id, cmd}));
  if (rows.empty()) return std::optional<CommandRow>();
  return std::optional<CommandRow>(commandOf(rows[0]));
}

}  // namespace corral::daemon

namespace corral::daemon {

Result<std::optional<SessionRow>> Store::claimPoolMember(const std::string& pool, const SessionRow& as,
                                                         const std::function<ClaimCheck(const SessionRow&)>& check,
                                                         int64_t synced_seq) {
  std::lock_guard lock(mu_);
  // BEGIN and COMMIT as kept statements (query), not parsed again each time (script).
  RETURN_IF_ERROR(db_.exec("BEGIN IMMEDIATE"));
  auto fail = [&](Error e) -> Result<std::optional<SessionRow>> {
    (void)db_.exec("ROLLBACK");
    return e;
  };
  // Invariant: one commit, so a kill -9 leaves the member pooled or the session claimed (with
  // its audit line kept), never a row in between; the pool key is cleared in the same write.
  auto rows = db_.query("UPDATE sessions SET pool='', state=?, name=COALESCE(NULLIF(?, ''), id), owner_uid=?, spec=?, expires_at=?, created_at=?"
                        " WHERE id=(SELECT id FROM sessions WHERE pool=? AND state='pooled'"
                        " ORDER BY created_at, id LIMIT 1) RETURNING id, name, owner_uid, state, secret, spec,"
                        " shim_pid, shim_start, init_pid, init_start, created_at, expires_at, pool",
                        {as.state, as.name, as.owner_uid, as.spec, as.expires_at, now(), pool});
  if (!rows) return fail(rows.error());
  if (rows->empty()) {
    if (auto r = db_.exec("COMMIT"); !r) return fail(r.error());
    return std::optional<SessionRow>();
  }
  // The claimed row from the same statement (the columns of kSessionCols): no second read.
  SessionRow s = sessionOf((*rows)[0]);
  const ClaimCheck c = check(s);
  if (!c.alive) {
    if (auto r = db_.exec("UPDATE sessions SET state='removing' WHERE id=?", {s.id}); !r) return fail(r.error());
    s.state = "removing";
  } else if (c.audit_line) {
    if (auto r = db_.exec("INSERT INTO audit_outbox(seq, line) VALUES(?,?)", {c.audit_line->first, c.audit_line->second}); !r)
      return fail(r.error());
  }
  if (auto r = db_.exec("DELETE FROM audit_outbox WHERE seq<=?", {synced_seq}); !r) return fail(r.error());
  if (auto r = db_.exec("COMMIT"); !r) return fail(r.error());
  return std::optional<SessionRow>(std::move(s));
}

Result<std::vector<std::pair<int64_t, std::string>>> Store::auditOutbox() {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(auto rows, db_.query("SELECT seq, line FROM audit_outbox ORDER BY seq"));
  std::vector<std::pair<int64_t, std::string>> out;
  out.reserve(rows.size());
  for (const SqlRow& r : rows) out.emplace_back(asInt(r[0]).value_or(0), asText(r[1]));
  return out;
}

Result<void> Store::clearAuditOutbox() {
  std::lock_guard lock(mu_);
  return db_.exec("DELETE FROM audit_outbox");
}

Result<bool> Store::setPoolMemberReady(const std::string& id) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(db_.exec("UPDATE sessions SET state='pooled' WHERE id=? AND state='creating' AND pool!=''", {id}));
  return db_.changes() == 1;
}

Result<int64_t> Store::drainPools(const std::vector<std::string>& keep) {
  std::lock_guard lock(mu_);
  std::string sql = "UPDATE sessions SET state='removing' WHERE pool!='' AND state IN ('creating', 'pooled')";
  std::vector<SqlValue> params;
  params.reserve(keep.size());
  if (!keep.empty()) {
    sql += " AND pool NOT IN (";
    for (size_t i = 0; i < keep.size(); ++i) {
      sql += i ? ",?" : "?";
      params.emplace_back(keep[i]);
    }
    sql += ")";
  }
  RETURN_IF_ERROR(db_.exec(sql, params));
  return static_cast<int64_t>(db_.changes());
}

Result<std::vector<std::tuple<std::string, int64_t, int64_t>>> Store::poolCounts() {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(auto rows, db_.query("SELECT pool, SUM(state='pooled'), SUM(state='creating') FROM sessions"
                                        " WHERE pool!='' GROUP BY pool"));
  std::vector<std::tuple<std::string, int64_t, int64_t>> out;
  out.reserve(rows.size());
  for (const SqlRow& r : rows) out.emplace_back(asText(r[0]), asInt(r[1]).value_or(0), asInt(r[2]).value_or(0));
  return out;
}

}  // namespace corral::daemon
