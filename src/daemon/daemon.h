// SPDX-License-Identifier: Apache-2.0
// `corral daemon`: lock the state directory, open the store, reconcile, serve until SIGTERM.
#pragma once

#include <optional>
#include <string>

#include <sys/types.h>

#include "daemon/freezer.h"

namespace corral::daemon {

struct DaemonOptions {
  std::string state_dir;
  std::string socket;
  std::optional<gid_t> allow_group;
  bool stop_sessions = false;  // on SIGTERM, end every session too
  size_t event_queue = 1024;   // GET /v1/events: events queued per subscriber before it loses some
  FreezerChoice freezer = FreezerChoice::kAuto;  // what pause uses (freezer.h)
  uint32_t warm = 0;           // --warm: sandboxes kept started for plain creates (warm_pool.h)
};

// Exit status: 0 after SIGTERM/SIGINT, 125 when it could not start (one line on stderr).
int runDaemon(const DaemonOptions& opts);

}  // namespace corral::daemon
