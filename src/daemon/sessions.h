// SPDX-License-Identifier: Apache-2.0
// Sessions: create (a shim per session), commands, removal, and reconciliation with what
// survived a daemon's death. Handlers get typed commands in and JSON values out.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/result.h"
#include "daemon/json_fields.h"
#include "daemon/peer.h"
#include "daemon/session_spec.h"
#include "daemon/shim_link.h"
#include "daemon/store.h"

namespace corral::daemon {

// Errors that are not the caller's input: which HTTP status (api_error.h maps them).
inline constexpr int kNotFound = ENOENT;   // 404: no such session (or not the caller's)
inline constexpr int kConflict = EBUSY;    // 409: the session is not in a state for that

class Sessions {
 public:
  Sessions(Store& store, std::string state_dir, std::string core_binary);

  Result<Json> create(const Peer& peer, const SessionSpec& spec);
  Result<Json> list(const Peer& peer);
  Result<Json> show(const Peer& peer, const std::string& id);
  Result<Json> remove(const Peer& peer, const std::string& id);
  Result<Json> startCommand(const Peer& peer, const std::string& id, const CommandSpec& cmd);
  Result<Json> command(const Peer& peer, const std::string& id, int64_t n);
  // The command's spool directory (stdout, stderr, status.json), for streaming.
  Result<std::string> commandDir(const Peer& peer, const std::string& id, int64_t n);
  // Whether the session's shim still answers (a stream waiting for a status asks).
  bool alive(const std::string& id);
  Result<Json> signalCommand(const Peer& peer, const std::string& id, int64_t n, int sig);

  // At start: adopt what is alive, mark what is gone lost, finish or undo what a crash cut short.
  void reconcile();
  // --stop-sessions: every session's shim is told to stop (they stay recorded, as stopped).
  void stopAll();

 private:
  struct Link {
    std::mutex mu;
    std::optional<ShimLink> link;
  };
  Result<SessionRow> owned(const Peer& peer, const std::string& id);
  Result<Json> callShim(const SessionRow& s, const Json& req);
  std::shared_ptr<Link> linkFor(const std::string& id);
  std::string dirOf(const std::string& id) const;
  Json sessionJson(const SessionRow& s);
  Json commandJson(const SessionRow& s, CommandRow c);
  void finishRemove(const SessionRow& s);
  void reconcileOne(const SessionRow& s);

  Store& store_;
  std::string state_dir_, core_;
  std::mutex links_mu_;
  std::map<std::string, std::shared_ptr<Link>> links_;
};

}  // namespace corral::daemon
