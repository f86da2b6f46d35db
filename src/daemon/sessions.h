// SPDX-License-Identifier: Apache-2.0
// Sessions: create (a shim per session), commands, removal, and reconciliation with what
// survived a daemon's death. Handlers get typed commands in and JSON values out.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "daemon/json_fields.h"
#include "daemon/peer.h"
#include "daemon/session_spec.h"
#include "daemon/shim_link.h"
#include "daemon/store.h"
#include "daemon/audit_log.h"
#include "daemon/credentials.h"
#include "daemon/events.h"
#include "daemon/profile.h"
#include "daemon/freezer.h"
#include "daemon/workspace_disk.h"

namespace corral::daemon {

// Errors that are not the caller's input: which HTTP status (api_error.h maps them).
inline constexpr int kNotFound = ENOENT;   // 404: no such session (or not the caller's)
inline constexpr int kConflict = EBUSY;    // 409: the session is not in a state for that

class WarmPool;

class Sessions {
 public:
  Sessions(Store& store, AuditLog& audit, std::string state_dir, std::string core_binary,
           FreezerChoice freezer = FreezerChoice::kAuto);
  // What pause uses here: "cgroup-v1", "cgroup-v2" or "none" (session show's "freezer").
  std::string freezerName() const { return freezer_.name(); }
  // An event in the daemon's hash-chained log (audit_log.h): ids, counts, decisions only.
  void audit(const std::string& event, const Peer& peer, Json fields) { audit_.append(event, peer, std::move(fields)); }

  // leases: the spec's credentials, opened (Credentials::lease); their values go to the shim alone.
  Result<Json> create(const Peer& peer, const SessionSpec& spec, const std::vector<LeasedCredential>& leases = {});
  // Asks the shim of each running or paused session that holds leases of owner (-1: anyone's)
  // for its uses so far and adds them to the records (credential ls/show answer after this).
  void collectLeaseUses(int64_t owner);
  // A profile's startup command (session_startup.cc): started detached, then its readiness
  // probe run until it exits 0; an error when the probe never passed within its timeout (the
  // caller removes the session). The answer: {"cmd", "ready", "probes"}.
  Result<Json> runStartup(const Peer& peer, const std::string& id, const StartupCommand& startup);
  Result<Json> list(const Peer& peer);
  Result<Json> show(const Peer& peer, const std::string& id);
  // keep_workspace: the workspace is moved to STATE/kept/ (its path is in the answer), not removed.
  Result<Json> remove(const Peer& peer, const std::string& id, bool keep_workspace = false);
  // session recover: a new sandbox (a new shim, init and secret) on a lost session's directory
  // and workspace, with its stored spec; env values were never stored, so they are given again.
  Result<Json> recover(const Peer& peer, const std::string& id, const std::vector<std::pair<std::string, std::string>>& env,
                       const std::vector<LeasedCredential>& leases);
  // io: the command's stdin (cmd.stdin) or its terminal's master (cmd.tty), from the shim.
  Result<Json> startCommand(const Peer& peer, const std::string& id, const CommandSpec& cmd, UniqueFd* io = nullptr);
  Result<Json> command(const Peer& peer, const std::string& id, int64_t n);
  // The command's spool directory (stdout, stderr, status.json), for streaming.
  Result<std::string> commandDir(const Peer& peer, const std::string& id, int64_t n);
  // Whether the session's shim still answers (a stream waiting for a status asks).
  bool alive(const std::string& id);
  Result<Json> signalCommand(const Peer& peer, const std::string& id, int64_t n, int sig);
  // The shim's copy of a command's stdin or terminal master (the shim keeps them, so a restarted
  // daemon gets them back): a new descriptor for it, or kConflict when the shim holds none.
  Result<UniqueFd> commandIoFromShim(const Peer& peer, const std::string& id, int64_t n, bool tty);
  // Closes the shim's copy; whether it had one.
  Result<bool> closeCommandIoInShim(const Peer& peer, const std::string& id, int64_t n, bool tty);
  // The cgroup freezer (freezer.h): every process of the session stopped, or let go again.
  Result<Json> pause(const Peer& peer, const std::string& id);
  Result<Json> resume(const Peer& peer, const std::string& id);

  // --ttl: removes each session whose expiry has passed, then waits for the next one (or a
  // new session's); runs for the daemon's life, on a thread of its own.
  [[noreturn]] void runExpiry();
  // Every 200 ms: records commands that ended (command_exited) and, every second, the lease
  // uses and egress decisions of proxy sessions (the event stream's "egress"). Its own thread.
  [[noreturn]] void runWatcher();
  void setEvents(EventBus* events) { events_ = events; }
  // The warm pool (warm_pool.h) a create claims from first; null: every create is cold.
  void setPool(WarmPool* pool) { pool_ = pool; }
  WarmPool* pool() const { return pool_; }
  // Whether this host caps a session's workspace (a plain create needs it).
  bool workspaceCapped() const { return workspace_.capped; }
  // A warm pool member of pool: a session sandbox that nobody owns yet (warm_pool.h fills).
  Result<std::string> fillPoolMember(const std::string& pool, const SessionSpec& spec);
  // Every drained member (removing, of a pool) destroyed as rm would.
  void destroyDrainedMembers();

  // A session's workspace for the files API: its directory (a lost session's too), the host
  // ids that own its files, the session's --workspace-size (an upload's cap).
  struct Workspace {
    UniqueFd dir;
    uid_t uid;
    gid_t gid;
    uint64_t cap;
  };
  Result<Workspace> workspace(const Peer& peer, const std::string& id);
  // A VM session's files API (its agent serves it; the host never mounts the guest's disk):
  // whether id is one, and a file_get/file_put request to its shim ({"status", "data"|"bytes"|"error"}).
  Result<bool> isVmSession(const Peer& peer, const std::string& id);
  Result<Json> vmFileCall(const Peer& peer, const std::string& id, const Json& req);

  // One request to a session's shim over the daemon's link to it (credentials.cc: a rotation's
  // rotate_lease). A kRefused Error is the shim's answer; any other, that it did not answer.
  Result<Json> callSessionShim(const SessionRow& s, const Json& req) { return callShim(s, req); }

  // At start: adopt what is alive, mark what is gone lost, finish or undo what a crash cut short.
  void reconcile();
  // --stop-sessions: every session's shim is told to stop (they stay recorded, as stopped).
  void stopAll();

 private:
  // pause/resume of a VM session: QMP stop/cont through its shim.
  Result<Json> pauseVm(const Peer& peer, const SessionRow& s, bool pause);
  struct Link {
    std::mutex mu;
    std::optional<ShimLink> link;
  };
  Result<SessionRow> owned(const Peer& peer, const std::string& id);
  Result<Json> callShim(const SessionRow& s, const Json& req, UniqueFd* fd = nullptr);
  std::shared_ptr<Link> linkFor(const std::string& id);
  std::string dirOf(const std::string& id) const;
  Json sessionJson(const SessionRow& s);
  Json commandJson(const SessionRow& s, CommandRow c);
  // Stops the shim, unmounts the workspace, removes the directory and the row. kept: where the
  // workspace went instead (empty: removed with the rest).
  void finishRemove(const SessionRow& s, std::string* kept = nullptr);
  // Starts the shim of a session whose row and directory exist, and records its processes.
  // pooled: the row stays "creating" (the caller makes it a pool member), else it becomes running.
  Result<ShimProcesses> launch(const SessionRow& row, const SessionSpec& spec, const std::vector<LeasedCredential>& leases,
                               bool pooled = false);
  Result<void> prepareWorkspace(const Peer& peer, const SessionSpec& spec, const std::string& dir);
  Result<void> copyIn(const Peer& peer, const SessionSpec& spec, const std::string& dir);
  // A create served by a pool member of key (row: the create's name, owner, spec, expiry);
  // nullopt when the pool has none to give (the create is made cold).
  Result<std::optional<Json>> claim(const Peer& peer, const std::string& key, const SessionSpec& spec, SessionRow row);
  void reconcileOne(const SessionRow& s);
  void reconcileMember(const SessionRow& s);  // a warm pool member: adopted, or destroyed
  // After reconciliation: kills every shim of this state directory that is not a live
  // session's recorded one (orphans.h), and unmounts what a directory of no session holds.
  void sweepOrphans();
  void collectLeaseUses(const SessionRow& s);
  void recordEndedCommands(const SessionRow& s);

  Store& store_;
  AuditLog& audit_;
  std::string state_dir_, core_;
  WorkspaceMechanism workspace_;  // how this host caps a session's workspace (found once)
  Freezer freezer_;               // how it pauses one
  std::mutex expiry_mu_;
  std::condition_variable expiry_cv_;
  std::mutex links_mu_;
  std::map<std::string, std::shared_ptr<Link>> links_;
  EventBus* events_ = nullptr;
  WarmPool* pool_ = nullptr;
  std::mutex egress_mu_;
  struct EgressSeen {
    int64_t allowed = 0, refused = 0, seq = 0;  // counts, and the last decision sent one by one
  };
  std::map<std::string, EgressSeen> egress_seen_;  // by session
};

}  // namespace corral::daemon
