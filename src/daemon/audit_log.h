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
#include <utility>
#include <vector>

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
  AuditLog(AuditLog&& o) noexcept : fd_(std::move(o.fd_)), seq_(o.seq_), prev_(std::move(o.prev_)), synced_seq_(o.synced_seq_) {}

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
  // A line made durable by another store's commit instead of its own fdatasync (a warm
  // create's claim, store.h): the claim's SQLite commit keeps the line in its outbox, the line
  // is then written here without a sync, and a later sync of this file (any synced append, a
  // batch's end, or every kMaxUnsynced lines) lets the outbox drop it. A kill -9 loses nothing
  // (the page cache has the line); after a power cut, replay() puts back what the file lost.
  // The reservation holds the log's lock from line() until it ends, so no other line can take
  // its seq; it takes it before the store's (the order everywhere: log, then store).
  class Reservation {
   public:
    explicit Reservation(AuditLog& log);
    ~Reservation();  // unlocks; the observer then sees the written line's event
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    // The next line, (seq, text without its newline), for the outbox; nothing written yet.
    std::pair<int64_t, std::string> line(const std::string& event, const Peer& peer, Json fields);
    // Appends the line line() made, after the store's commit.
    void write();
    // Lines up to here are on disk (the outbox may drop them).
    int64_t syncedSeq() const { return log_.synced_seq_; }

   private:
    AuditLog& log_;
    std::unique_lock<std::mutex> lock_;
    std::string event_;
    Peer peer_{};
    Json given_;
    std::string hash_;
    std::string text_;
    int64_t seq_ = 0;
    bool written_ = false;
  };
  // At start, before anything is appended: the outbox's lines (seq order). One whose seq is in
  // the file is already there; the next one is appended as it was (its prev is the file's last
  // hash); after a gap (lines of a batch lost with it) an event is appended again as a new line
  // with "replayed_seq". Synced before it returns; the caller then clears the outbox.
  Result<int> replay(const std::vector<std::pair<int64_t, std::string>>& kept);
  // Called after each event is written, outside the log's lock (the event stream, events.h).
  using Observer = std::function<void(const std::string& event, const Peer& peer, const Json& fields)>;
  void setObserver(Observer o) { observer_ = std::move(o); }

 private:
  AuditLog() = default;
  void appendLocked(const std::string& event, const Peer& peer, Json fields);
  // Line seq_+1 of event, chained on prev_: (its hash, its text without the newline).
  std::pair<std::string, std::string> nextLine(const std::string& event, const Peer& peer, Json fields) const;
  std::mutex mu_;
  UniqueFd fd_;
  int64_t seq_ = 0;
  std::string prev_ = kAuditGenesis;
  int batch_depth_ = 0;
  bool unsynced_ = false;
  int64_t synced_seq_ = 0;  // every line up to it is on disk
  static constexpr int64_t kMaxUnsynced = 32;  // reserved lines written without a sync, at most
  Observer observer_;
};

// Checks a log's chain: every line parses, seq counts up from 1, each "prev" is the hash of
// the line before, each "hash" is right. Returns the number of events, or where it broke.
Result<int64_t> verifyAuditLog(const std::string& path);

}  // namespace corral::daemon
