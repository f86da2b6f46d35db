// SPDX-License-Identifier: Apache-2.0
// The daemon's state in SQLite: sessions and their commands, a schema version and its
// migrations. Every state change is its own synchronous transaction.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "base/result.h"
#include "daemon/sqlite.h"

namespace corral::daemon {

inline constexpr int kSchemaVersion = 6;

struct SessionRow {
  std::string id, name, state, secret, spec;  // spec: sessionSpecJson, env values included (0600 file)
  int64_t owner_uid = 0, shim_pid = 0, shim_start = 0, init_pid = 0, init_start = 0, created_at = 0;
  int64_t expires_at = 0;  // unix ms (--ttl); 0: never
  // A warm pool member's pool (warm_pool.h), "" for a session. A member's states: creating,
  // pooled, removing; a claim makes it a session (pool "", state claiming or running).
  std::string pool;
};

struct CommandRow {
  std::string session_id;
  int64_t cmd = 0;
  std::string state;  // starting, running, exited, failed
  int64_t argc = 0;
  std::optional<int64_t> exit_code;
  std::string report;  // the status JSON, once known
  int64_t created_at = 0;
};

// A credential record's metadata (the value is sealed elsewhere: credential_vault.h).
struct CredentialRow {
  int64_t owner_uid = 0;
  std::string name, host, header, format, env, fingerprint;
  int64_t created_at = 0, rotated_at = 0;  // unix seconds; rotated_at 0: never
  int64_t last_used_ms = 0, use_count = 0;
  int64_t version = 1;                     // counts up on each rotation
  int64_t active_leases = 0;               // sessions holding a lease of it now (running, paused)
  int64_t stale_leases = 0;                // of those, sessions leased an older version
};

// One version of a startup profile: the document as it was added.
struct ProfileRow {
  int64_t owner_uid = 0;
  std::string name;
  int64_t version = 0;
  std::string doc;
  int64_t created_at = 0;
  int64_t versions = 0;  // in lists: how many versions the name has
};

class Store {
 public:
  static Result<Store> open(const std::string& path);
  Store(Store&& o) noexcept : db_(std::move(o.db_)) {}

  Result<int> schemaVersion();
  Result<void> insertSession(const SessionRow& s);
  Result<void> setSessionState(const std::string& id, const std::string& state);
  Result<void> setSessionProcesses(const std::string& id, int64_t shim_pid, int64_t shim_start, int64_t init_pid,
                                   int64_t init_start);
  Result<std::vector<SessionRow>> sessions();
  Result<std::optional<SessionRow>> session(const std::string& id);
  Result<void> deleteSession(const std::string& id);  // its commands too
  // session recover: a lost session gets a new secret and state "recovering" (true when it
  // was lost), and its commands that never reported an end are marked lost.
  Result<bool> markRecovering(const std::string& id, const std::string& secret);

  // A new command number for the session (never reused), recorded as "starting".
  Result<int64_t> addCommand(const std::string& session_id, int64_t argc);
  Result<void> setCommand(const std::string& session_id, int64_t cmd, const std::string& state,
                          std::optional<int64_t> exit_code, const std::string& report);
  // The command's end, recorded once: true when this call made it (it was starting or running).
  Result<bool> finishCommand(const std::string& session_id, int64_t cmd, std::optional<int64_t> exit_code,
                             const std::string& report);
  Result<std::vector<CommandRow>> commands(const std::string& session_id);
  Result<std::optional<CommandRow>> command(const std::string& session_id, int64_t cmd);

  // Credentials (store_credentials.cc). insert refuses an existing (owner, name) with kConflict.
  Result<void> insertCredential(const CredentialRow& c);
  // format: a new one too (an ssh-key record's public key fingerprint), when given.
  Result<void> rotateCredential(int64_t owner, const std::string& name, const std::string& fingerprint,
                                const std::string* format = nullptr);
  Result<void> setCredentialFingerprint(int64_t owner, const std::string& name, const std::string& fingerprint,
                                        const std::string* format = nullptr);
  Result<void> deleteCredential(int64_t owner, const std::string& name);
  // owner < 0: every owner's.
  Result<std::vector<CredentialRow>> credentials(int64_t owner);
  Result<std::optional<CredentialRow>> credential(int64_t owner, const std::string& name);
  // A session's leases, recorded at create with the version each one got.
  Result<void> addSessionCredential(const std::string& session_id, int64_t owner, const std::string& name, int64_t version);
  // A recovered session's lease: a new shim counts from 0, with the record's current version.
  Result<void> renewSessionCredential(const std::string& session_id, int64_t owner, const std::string& name, int64_t version);
  // (owner, name, uses the shim reported before) of a session's leases.
  struct SessionLease {
    int64_t owner;
    std::string name;
    int64_t seen_uses;
  };
  Result<std::vector<SessionLease>> sessionCredentials(const std::string& session_id);
  // Rotation (store_credentials.cc): the sessions that may hold owner's record `name` in a
  // live shim (creating, running, paused), with the version each was last given; and a
  // rotation that reached a session's shim (its uses go on counting, unlike a renewal).
  struct Leaseholder {
    std::string session_id;
    int64_t version;
  };
  Result<std::vector<Leaseholder>> leaseholders(int64_t owner, const std::string& name);
  Result<void> setSessionCredentialVersion(const std::string& session_id, int64_t owner, const std::string& name, int64_t version);
  // The shim reports uses since the session began: the difference to what was seen is added
  // to the record's count, in one transaction.
  // Profiles (store_profiles.cc): each add is the name's next version; rm removes them all.
  Result<int64_t> addProfileVersion(int64_t owner, const std::string& name, const std::string& doc);
  // version 0: the newest.
  Result<std::optional<ProfileRow>> profile(int64_t owner, const std::string& name, int64_t version);
  Result<std::vector<ProfileRow>> profiles(int64_t owner);  // newest of each; owner < 0: all
  Result<int64_t> deleteProfile(int64_t owner, const std::string& name);  // versions removed

  // Warm pool members. A claim is one transaction: the oldest pooled member of pool becomes
  // the owner's session, with the create's name, spec, expiry and state (none: nullopt).
  // check(row) is called inside it with the claimed row: a member it finds dead is made
  // "removing" instead (its row comes back so), and an audit line it returns is kept in the
  // audit outbox in the same commit, so the line is as durable as the claim with one sync
  // (audit_log.h, AuditLog::Reservation). Outbox lines up to synced_seq, which the log has
  // synced since, are deleted in the same write.
  struct ClaimCheck {
    bool alive = true;
    std::optional<std::pair<int64_t, std::string>> audit_line;  // (seq, line)
  };
  Result<std::optional<SessionRow>> claimPoolMember(const std::string& pool, const SessionRow& as,
                                                    const std::function<ClaimCheck(const SessionRow&)>& check, int64_t synced_seq);
  // The audit outbox at start (seq order): lines a power cut may have taken from the log's end.
  Result<std::vector<std::pair<int64_t, std::string>>> auditOutbox();
  Result<void> clearAuditOutbox();
  // creating -> pooled; false when the member was drained (or removed) meanwhile.
  Result<bool> setPoolMemberReady(const std::string& id);
  // Members of pools not in keep (creating or pooled) become removing: no claim can take them.
  Result<int64_t> drainPools(const std::vector<std::string>& keep);
  // Live members per pool: {pool -> (pooled, creating)}.
  Result<std::vector<std::tuple<std::string, int64_t, int64_t>>> poolCounts();

  Result<void> foldCredentialUses(const std::string& session_id, int64_t owner, const std::string& name, int64_t uses,
                                  int64_t last_used_ms);

 private:
  explicit Store(Sqlite db) : db_(std::move(db)) {}
  Result<void> migrate();
  std::mutex mu_;
  Sqlite db_;
};

}  // namespace corral::daemon
