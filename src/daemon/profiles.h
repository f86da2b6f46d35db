// SPDX-License-Identifier: Apache-2.0
// Startup profiles as the API serves them: per-uid, every version kept; and a session made
// from one (its spec narrowed by the request, then its startup command and readiness probe).
#pragma once

#include <string>

#include "base/result.h"
#include "daemon/audit_log.h"
#include "daemon/json_fields.h"
#include "daemon/peer.h"
#include "daemon/profile.h"
#include "daemon/store.h"

namespace corral::daemon {

class WarmPool;

class Profiles {
 public:
  Profiles(Store& store, AuditLog& audit) : store_(store), audit_(audit) {}
  // The warm pool: a profile's warm counts against its cap, and an add or rm refreshes it
  // (the old version's members are drained, never handed out).
  void setPool(WarmPool* pool) { pool_ = pool; }

  // The document (a JSON text): validated, stored as the name's next version.
  Result<Json> add(const Peer& peer, std::string_view text);
  Result<Json> list(const Peer& peer);
  // version 0: the newest.
  Result<Json> show(const Peer& peer, const std::string& name, int64_t version);
  Result<Json> remove(const Peer& peer, const std::string& name);

  struct Resolved {
    Profile profile;
    int64_t version;
  };
  // The peer's own profile, parsed again from what was stored.
  Result<Resolved> resolve(const Peer& peer, const std::string& name, int64_t version);

 private:
  Store& store_;
  AuditLog& audit_;
  WarmPool* pool_ = nullptr;
};

}  // namespace corral::daemon
