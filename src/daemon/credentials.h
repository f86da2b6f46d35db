// SPDX-License-Identifier: Apache-2.0
// Credential records: write-only values (sealed by CredentialVault), metadata in the store,
// owned per uid like sessions. Only metadata ever leaves: name, host, header format, the
// sandbox variable, created/rotated/last used, use count, version, keyed fingerprint.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/secret.h"
#include "daemon/audit_log.h"
#include "daemon/credential_request.h"
#include "daemon/credential_vault.h"
#include "daemon/json_fields.h"
#include "daemon/peer.h"
#include "daemon/store.h"

namespace corral::daemon {

class Sessions;

// What a session's shim gets for one lease: the record's fields and the opened value.
struct LeasedCredential {
  std::string name, env, host, header, format;
  int64_t version = 0;
  Secret value{""};
};

class Credentials {
 public:
  Credentials(Store& store, CredentialVault& vault, AuditLog& audit) : store_(store), vault_(vault), audit_(audit) {}

  Result<Json> add(const Peer& peer, AddCredential cmd);
  // The new value is sealed, then pushed to the shim of every running or paused session that
  // leases the record before this returns: none injects the old value after. A session whose
  // shim does not take it is cut off (its shim killed: the lease ends, the session is lost).
  Result<Json> rotate(const Peer& peer, const std::string& name, const Secret& value, Sessions& sessions);
  Result<Json> list(const Peer& peer);
  Result<Json> show(const Peer& peer, const std::string& name);
  // Refused (409) while a running or paused session holds a lease of it.
  Result<Json> remove(const Peer& peer, const std::string& name);
  // The peer's own records by name, opened for a new session's shim: header records in names,
  // an ssh-key record as ssh_key (last in the answer, with an empty header); a record of the
  // other kind in either place is refused.
  Result<std::vector<LeasedCredential>> lease(const Peer& peer, const std::vector<std::string>& names,
                                              const std::optional<std::string>& ssh_key = std::nullopt);

  // At start: a sealed file without a record (an add cut short, a remove cut short) is removed;
  // a record whose fingerprint is not its value's (a rotation cut short) is corrected.
  void reconcile();
  // After sessions are reconciled: a rotation cut short by the daemon's death (the value sealed,
  // not every shim told) is finished: each adopted session still on an older version gets the
  // current value, or is cut off.
  void renewStaleLeases(Sessions& sessions);
  // After a create or recover started its shim with `leases`: a rotation that ran between the
  // lease (the values read) and the session's lease rows (which that rotation could not list)
  // is caught up now, before the session is answered: each record rotated since is pushed to
  // this session's shim, or the shim is cut off (an error then).
  Result<void> catchUp(const std::string& session_id, int64_t owner, const std::vector<LeasedCredential>& leases,
                       Sessions& sessions);

 private:
  Json metadata(const CredentialRow& c) const;
  // Pushes owner's record `name` at `version` to every leaseholder on an older one (only to
  // session `only` when given); mu_ held.
  struct Reach {
    int64_t reached = 0, cut = 0;
  };
  Reach pushValue(int64_t owner, const std::string& name, int64_t version, std::string_view value, Sessions& sessions,
                  const std::string& only = "");
  Store& store_;
  CredentialVault& vault_;
  AuditLog& audit_;
  std::mutex mu_;  // add, rotate and remove: the sealed file and the row change together
};

}  // namespace corral::daemon
