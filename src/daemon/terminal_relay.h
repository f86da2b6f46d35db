// SPDX-License-Identifier: Apache-2.0
// The daemon's side of an upgraded terminal connection: frames (terminal_frame.h) between the
// client and a tty command's master, in fixed buffers, until the command's status exists.
#pragma once

#include <functional>
#include <string>

#include "base/unique_fd.h"

namespace corral::daemon {

// What the relay holds at most, either way: one frame's payload (terminal::kMaxPayload) and
// its header. It reads the master only once the client has taken what it read before, so a
// client that stops reading stops the command's writes (the pty's buffer fills), not memory.
struct TerminalRelay {
  int client = -1;           // the upgraded connection (the caller closes it)
  std::string early;         // bytes the HTTP parser read past the request's head
  UniqueFd master;           // the command's terminal (invalid: it ended while detached)
  std::string first;         // frames sent before any other (a re-attach's scrollback)
  size_t first_output = 0;   // of first, the trailing bytes that are terminal output
  std::string cmd_dir;       // STATE/sessions/ID/cmds/N: its status.json ends the relay
  std::function<bool()> alive;  // whether the session's shim still answers
};

// How a relay ended, and what it had read from the terminal but not delivered.
struct RelayEnd {
  enum Why { kExited, kClientGone, kRefused, kLost } why;
  std::string unsent;
};

// Returns when the command's report was sent (kExit), the client left, it broke the protocol
// (kError sent: an unknown or oversized frame, an absurd size), or the session was lost. The
// master stays in r: the caller keeps it for a re-attach (kClientGone) or closes it.
RelayEnd relayTerminal(TerminalRelay& r);

}  // namespace corral::daemon
