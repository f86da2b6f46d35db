// SPDX-License-Identifier: Apache-2.0
// Credential records and the leases sessions hold, in the daemon's SQLite store.
#include <ctime>

#include "daemon/sessions.h"
#include "daemon/store.h"

namespace corral::daemon {
namespace {

// The active and stale lease counts come from the sessions that hold one and still run.
constexpr const char* kCredentialCols =
    "SELECT c.owner_uid, c.name, c.host, c.header, c.format, c.env, c.fingerprint, c.created_at, c.rotated_at,"
    " c.last_used_ms, c.use_count, c.version,"
    " (SELECT COUNT(*) FROM session_credentials l JOIN sessions s ON s.id = l.session_id"
    "   WHERE l.owner_uid = c.owner_uid AND l.name = c.name AND s.state IN ('creating', 'running', 'paused')),"
    " (SELECT COUNT(*) FROM session_credentials l JOIN sessions s ON s.id = l.session_id"
    "   WHERE l.owner_uid = c.owner_uid AND l.name = c.name AND s.state IN ('creating', 'running', 'paused')"
    "   AND l.version < c.version)"
    " FROM credentials c";

CredentialRow credentialOf(const SqlRow& r) {
  CredentialRow c;
  c.owner_uid = asInt(r[0]).value_or(-1);
  c.name = asText(r[1]);
  c.host = asText(r[2]);
  c.header = asText(r[3]);
  c.format = asText(r[4]);
  c.env = asText(r[5]);
  c.fingerprint = asText(r[6]);
  c.created_at = asInt(r[7]).value_or(0);
  c.rotated_at = asInt(r[8]).value_or(0);
  c.last_used_ms = asInt(r[9]).value_or(0);
  c.use_count = asInt(r[10]).value_or(0);
  c.version = asInt(r[11]).value_or(1);
  c.active_leases = asInt(r[12]).value_or(0);
  c.stale_leases = asInt(r[13]).value_or(0);
  return c;
}

}  // namespace

Result<void> Store::insertCredential(const CredentialRow& c) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(auto rows, db_.query("SELECT 1 FROM credentials WHERE owner_uid=? AND name=?", {c.owner_uid, c.name}));
  if (!rows.empty()) return Error(kConflict, "credential '" + c.name + "' exists (rotate it, or remove it first)");
  return db_.exec("INSERT INTO credentials(owner_uid, name, host, header, format, env, fingerprint, created_at)"
                  " VALUES(?,?,?,?,?,?,?,?)",
                  {c.owner_uid, c.name, c.host, c.header, c.format, c.env, c.fingerprint, static_cast<int64_t>(::time(nullptr))});
}

Result<void> Store::rotateCredential(int64_t owner, const std::string& name, const std::string& fingerprint,
                                     const std::string* format) {
  std::lock_guard lock(mu_);
  if (format)
    return db_.exec("UPDATE credentials SET fingerprint=?, format=?, rotated_at=?, version=version+1 WHERE owner_uid=? AND name=?",
                    {fingerprint, *format, static_cast<int64_t>(::time(nullptr)), owner, name});
  return db_.exec("UPDATE credentials SET fingerprint=?, rotated_at=?, version=version+1 WHERE owner_uid=? AND name=?",
                  {fingerprint, static_cast<int64_t>(::time(nullptr)), owner, name});
}

Result<void> Store::setCredentialFingerprint(int64_t owner, const std::string& name, const std::string& fingerprint,
                                             const std::string* format) {
  std::lock_guard lock(mu_);
  if (format)
    return db_.exec("UPDATE credentials SET fingerprint=?, format=? WHERE owner_uid=? AND name=?", {fingerprint, *format, owner, name});
  return db_.exec("UPDATE credentials SET fingerprint=? WHERE owner_uid=? AND name=?", {fingerprint, owner, name});
}

Result<void> Store::deleteCredential(int64_t owner, const std::string& name) {
  std::lock_guard lock(mu_);
  return db_.exec("DELETE FROM credentials WHERE owner_uid=? AND name=?", {owner, name});
}

Result<std::vector<CredentialRow>> Store::credentials(int64_t owner) {
  std::lock_guard lock(mu_);
  std::vector<SqlRow> rows;
  if (owner < 0) {
    ASSIGN_OR_RETURN(rows, db_.query(std::string(kCredentialCols) + " ORDER BY c.owner_uid, c.name"));
  } else {
    ASSIGN_OR_RETURN(rows, db_.query(std::string(kCredentialCols) + " WHERE c.owner_uid=? ORDER BY c.name", {owner}));
  }
  std::vector<CredentialRow> out;
  out.reserve(rows.size());
  for (const SqlRow& r : rows) out.push_back(credentialOf(r));
  return out;
}

Result<std::optional<CredentialRow>> Store::credential(int64_t owner, const std::string& name) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(auto rows, db_.query(std::string(kCredentialCols) + " WHERE c.owner_uid=? AND c.name=?", {owner, name}));
  if (rows.empty()) return std::optional<CredentialRow>();
  return std::optional<CredentialRow>(credentialOf(rows[0]));
}

Result<void> Store::addSessionCredential(const std::string& session_id, int64_t owner, const std::string& name, int64_t version) {
  std::lock_guard lock(mu_);
  return db_.exec("INSERT INTO session_credentials(session_id, owner_uid, name, version) VALUES(?,?,?,?)",
                  {session_id, owner, name, version});
}

Result<void> Store::renewSessionCredential(const std::string& session_id, int64_t owner, const std::string& name, int64_t version) {
  std::lock_guard lock(mu_);
  return db_.exec("UPDATE session_credentials SET version=?, seen_uses=0 WHERE session_id=? AND owner_uid=? AND name=?",
                  {version, session_id, owner, name});
}

Result<std::vector<Store::Leaseholder>> Store::leaseholders(int64_t owner, const std::string& name) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(auto rows, db_.query("SELECT l.session_id, l.version FROM session_credentials l JOIN sessions s ON s.id = l.session_id"
                                        " WHERE l.owner_uid=? AND l.name=? AND s.state IN ('creating', 'running', 'paused')"
                                        " ORDER BY l.session_id",
                                        {owner, name}));
  std::vector<Leaseholder> out;
  out.reserve(rows.size());
  for (const SqlRow& r : rows) out.push_back({asText(r[0]), asInt(r[1]).value_or(0)});
  return out;
}

Result<void> Store::setSessionCredentialVersion(const std::string& session_id, int64_t owner, const std::string& name, int64_t version) {
  std::lock_guard lock(mu_);
  return db_.exec("UPDATE session_credentials SET version=? WHERE session_id=? AND owner_uid=? AND name=?", {version, session_id, owner, name});
}

Result<std::vector<Store::SessionLease>> Store::sessionCredentials(const std::string& session_id) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(auto rows, db_.query("SELECT owner_uid, name, seen_uses FROM session_credentials WHERE session_id=? ORDER BY name",
                                        {session_id}));
  std::vector<SessionLease> out;
  out.reserve(rows.size());
  for (const SqlRow& r : rows) out.push_back({asInt(r[0]).value_or(-1), asText(r[1]), asInt(r[2]).value_or(0)});
  return out;
}

Result<void> Store::foldCredentialUses(const std::string& session_id, int64_t owner, const std::string& name, int64_t uses,
                                       int64_t last_used_ms) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(db_.script("BEGIN IMMEDIATE"));
  auto fail = [&](Error e) -> Result<void> {
    (void)db_.script("ROLLBACK");
    return e;
  };
  auto rows = db_.query("SELECT seen_uses FROM session_credentials WHERE session_id=? AND owner_uid=? AND name=?",
                        {session_id, owner, name});
  if (!rows) return fail(rows.error());
  const int64_t seen = rows->empty() ? uses : asInt((*rows)[0][0]).value_or(0);
  if (uses > seen) {
    if (auto r = db_.exec("UPDATE session_credentials SET seen_uses=? WHERE session_id=? AND owner_uid=? AND name=?",
                          {uses, session_id, owner, name});
        !r)
      return fail(r.error());
    if (auto r = db_.exec("UPDATE credentials SET use_count=use_count+?, last_used_ms=MAX(last_used_ms, ?)"
                          " WHERE owner_uid=? AND name=?",
                          {uses - seen, last_used_ms, owner, name});
        !r)
      return fail(r.error());
  }
  return db_.script("COMMIT");
}

}  // namespace corral::daemon
