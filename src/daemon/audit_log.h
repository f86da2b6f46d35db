// SPDX-License-Identifier: Apache-2.0
// The daemon's own event log: STATE/audit.jsonl, one JSON object per line, each carrying the
// SHA-256 of the line before it, so an edited, dropped or reordered line breaks the chain
// (`corral daemon verify-log FILE`). Ids, counts and decisions only, with the peer's uid and pid.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "daemon/json_fields.h"
#include "daemon/peer.h"

namespace corral::daemon {

// The first line's "prev": 64 zeros.
inline constexpr char kAuditGenesis[] = "0000000000000000000000000000000000000000000000000000000000000000";

// A line's "hash": SHA-256 hex of its "prev" and its other fields, as canonical JSON (sorted
// keys, no spaces) without "hash".
std::string auditLineHash(const Json& line_without_hash);

class AuditLog {
 public:
  // Opens (0600, O_APPEND) and continues after the last line; a last line cut short by a crash
  // is cut off (kept aside in audit.jsonl.torn), never chained onto.
  static Result<AuditLog> open(const std::string& state_dir);
  AuditLog(AuditLog&& o) noexcept : fd_(std::move(o.fd_)), seq_(o.seq_), prev_(std::move(o.prev_)) {}

  // {"seq", "ts_ms", "event", "peer_uid", "peer_pid", ...fields, "prev", "hash"}, written and
  // fdatasync'd before it returns. fields must hold no secret, no content, no env value.
  void append(const std::string& event, const Peer& peer, Json fields = Json::object());
  // An event of the daemon itself (start, reconcile, expiry): peer_uid/peer_pid are its own.
  void appendSelf(const std::string& event, Json fields = Json::object());
  // While a Batch lives, lines are written at once but their fdatasync waits for the batch's
  // end: one for all of them. For reconcile at start, which logs one line per adopted session
  // (a sync each made a restart with 100 sessions take a second on a busy disk). A kill -9
  // inside it loses nothing (the lines are written); a power cut can lose lines of the batch
  // from its end only, and the chain stays whole.
  class Batch {
   public:
    explicit Batch(AuditLog& log);
    ~Batch();
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

   private:
    AuditLog& log_;
  };
  // Called after each event is written, outside the log's lock (the event stream, events.h).
  using Observer = std::function<void(const std::string& event, const Peer& peer, const Json& fields)>;
  void setObserver(Observer o) { observer_ = std::move(o); }

 private:
  AuditLog() = default;
  void appendLocked(const std::string& event, const Peer& peer, Json fields);
  std::mutex mu_;
  UniqueFd fd_;
  int64_t seq_ = 0;
  std::string prev_ = kAuditGenesis;
  int batch_depth_ = 0;
  bool unsynced_ = false;
  Observer observer_;
};

// Checks a log's chain: every line parses, seq counts up from 1, each "prev" is the hash of
// the line before, each "hash" is right. Returns the number of events, or where it broke.
Result<int64_t> verifyAuditLog(const std::string& path);

}  // namespace corral::daemon
