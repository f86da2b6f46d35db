// SPDX-License-Identifier: Apache-2.0
// Terminals whose client left while their command ran: the daemon keeps the master and reads it
// into a bounded scrollback (mirrored to a ring file, terminal_ring.h, for a restarted daemon)
// until a client re-attaches (api.md, Terminals: re-attaching).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "base/result.h"
#include "base/unique_fd.h"
#include "daemon/json_fields.h"
#include "daemon/terminal_ring.h"

namespace corral::daemon {

class TerminalHold {
 public:
  // What one attach gets: the master (invalid when the command ended while detached), and for a
  // re-attach what the terminal wrote meanwhile and how much of that was dropped.
  struct Claim {
    UniqueFd master;
    bool reattach = false;
    std::string scrollback;
    uint64_t dropped = 0;
  };
  // The one client of session's command: its master taken from CommandIo on the first attach,
  // from the hold on a re-attach. kConflict while another client is attached. A first attach
  // after a restart also takes the ring file the old daemon left (terminal_ring.h), as a
  // re-attach; an unusable one is removed and this attach refused (kConflict, the next works).
  Result<Claim> attach(const std::string& session, int64_t cmd, const std::string& dir);
  // The client left while the command may still run: its master is read into a scrollback
  // (unsent first: what the relay had read but not delivered) until the next attach.
  void detach(const std::string& session, int64_t cmd, UniqueFd master, std::string_view unsent);
  // The relay ended it (the report was sent, a protocol error, the session lost): forgotten.
  void forget(const std::string& session, int64_t cmd);
  // {"state": "attached"|"detached", "scrollback_bytes", "dropped_bytes", "ended"} or null.
  Json describe(const std::string& session, int64_t cmd);
  // describe() of each of session's terminals, with "command": N.
  Json list(const std::string& session);

 private:
  using Clock = std::chrono::steady_clock;
  using Key = std::pair<std::string, int64_t>;
  struct Entry {
    std::string dir;
    bool attached = true;
    UniqueFd master;          // while detached and running
    bool master_eof = false;  // EIO: every copy of the slave is closed
    Scrollback scrollback;
    RingFile ring;  // Invariant: exists while detached (and until an ended one is re-attached)
    Clock::time_point checked{};      // when status.json was last looked for
    Clock::time_point exit_seen{};    // when it was first seen (zero: not yet)
    uint64_t ended_seq = 0;           // nonzero once ended while detached (the master closed)
  };
  // Under mu_: a first attach (no entry), with the ring file a killed daemon may have left.
  Result<Claim> attachFirst(const std::string& session, int64_t cmd, const std::string& dir);
  void mirror(const Key& key, Entry& e);  // under mu_: the ring to its file (a failure logged)
  void startReader();  // under mu_
  void readLoop();
  void sweep(Clock::time_point now);  // under mu_: ended, removed and over-cap entries
  Json describeEntry(const Entry& e) const;
  std::mutex mu_;
  std::map<Key, Entry> entries_;
  UniqueFd wake_;  // an eventfd: the reader's set of masters changed
  bool reader_started_ = false;
  uint64_t ended_count_ = 0;
};

TerminalHold& terminalHold();  // the daemon's one (never destroyed: its reader thread outlives main)

}  // namespace corral::daemon
