// SPDX-License-Identifier: Apache-2.0
// Processes that belong to no recorded session: found by their command line at the daemon's
// start (after reconciliation) and killed with everything they started.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace corral::daemon {

struct ShimProcess {
  pid_t pid = 0;
  uint64_t start = 0;  // /proc start time, with the pid names one process
  std::string id;      // the session directory's name it serves
};

// Every live process of this uid whose command line is `CORE __session-shim SESSIONS_DIR/ID`
// (SESSIONS_DIR without a trailing '/'): the shims of this state directory, recorded or not.
std::vector<ShimProcess> findShims(const std::string& sessions_dir);

// SIGKILLs the process and all its descendants, each through a pidfd opened while the
// process was seen to be the one named (pid and start time), so a reused pid is never hit;
// waits up to timeout_ms for them to be gone. Returns how many were killed.
int killProcessTree(pid_t pid, uint64_t start, int timeout_ms);

}  // namespace corral::daemon
