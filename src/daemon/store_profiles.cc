// SPDX-License-Identifier: Apache-2.0
// Startup profiles in the daemon's SQLite store, every version kept.
#include <ctime>

#include "daemon/store.h"

namespace corral::daemon {
namespace {

ProfileRow profileOf(const SqlRow& r) {
  ProfileRow p;
  p.owner_uid = asInt(r[0]).value_or(-1);
  p.name = asText(r[1]);
  p.version = asInt(r[2]).value_or(0);
  p.doc = asText(r[3]);
  p.created_at = asInt(r[4]).value_or(0);
  p.versions = r.size() > 5 ? asInt(r[5]).value_or(0) : 0;
  return p;
}

}  // namespace

Result<int64_t> Store::addProfileVersion(int64_t owner, const std::string& name, const std::string& doc) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(db_.script("BEGIN IMMEDIATE"));
  auto fail = [&](Error e) -> Result<int64_t> {
    (void)db_.script("ROLLBACK");
    return e;
  };
  auto rows = db_.query("SELECT COALESCE(MAX(version), 0) FROM profiles WHERE owner_uid=? AND name=?", {owner, name});
  if (!rows) return fail(rows.error());
  const int64_t version = (rows->empty() ? 0 : asInt((*rows)[0][0]).value_or(0)) + 1;
  if (auto r = db_.exec("INSERT INTO profiles(owner_uid, name, version, doc, created_at) VALUES(?,?,?,?,?)",
                        {owner, name, version, doc, static_cast<int64_t>(::time(nullptr))});
      !r)
    return fail(r.error());
  RETURN_IF_ERROR(db_.script("COMMIT"));
  return version;
}

Result<std::optional<ProfileRow>> Store::profile(int64_t owner, const std::string& name, int64_t version) {
  std::lock_guard lock(mu_);
  std::vector<SqlRow> rows;
  if (version == 0) {
    ASSIGN_OR_RETURN(rows, db_.query("SELECT owner_uid, name, version, doc, created_at FROM profiles WHERE owner_uid=? AND name=?"
                                     " ORDER BY version DESC LIMIT 1",
                                     {owner, name}));
  } else {
    ASSIGN_OR_RETURN(rows, db_.query("SELECT owner_uid, name, version, doc, created_at FROM profiles WHERE owner_uid=? AND name=?"
                                     " AND version=?",
                                     {owner, name, version}));
  }
  if (rows.empty()) return std::optional<ProfileRow>();
  return std::optional<ProfileRow>(profileOf(rows[0]));
}

Result<std::vector<ProfileRow>> Store::profiles(int64_t owner) {
  std::lock_guard lock(mu_);
  const std::string newest =
      "SELECT p.owner_uid, p.name, p.version, p.doc, p.created_at,"
      " (SELECT COUNT(*) FROM profiles q WHERE q.owner_uid = p.owner_uid AND q.name = p.name)"
      " FROM profiles p WHERE p.version = (SELECT MAX(version) FROM profiles q WHERE q.owner_uid = p.owner_uid AND q.name = p.name)";
  std::vector<SqlRow> rows;
  if (owner < 0) {
    ASSIGN_OR_RETURN(rows, db_.query(newest + " ORDER BY p.owner_uid, p.name"));
  } else {
    ASSIGN_OR_RETURN(rows, db_.query(newest + " AND p.owner_uid=? ORDER BY p.name", {owner}));
  }
  std::vector<ProfileRow> out;
  out.reserve(rows.size());
  for (const SqlRow& r : rows) out.push_back(profileOf(r));
  return out;
}

Result<int64_t> Store::deleteProfile(int64_t owner, const std::string& name) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(db_.exec("DELETE FROM profiles WHERE owner_uid=? AND name=?", {owner, name}));
  return db_.changes();
}

}  // namespace corral::daemon
