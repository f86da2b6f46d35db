// SPDX-License-Identifier: Apache-2.0
// The shim's event loop: control clients, init's replies, command output, deadlines.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/unique_fd.h"
#include "sandbox/linux_backend.h"

namespace corral::daemon {
class ShimEgress;
}

namespace corral::daemon {

struct ShimConfig {
  int dir = -1;          // the session's directory (cmds/ beneath it)
  int listen = -1;       // control.sock
  std::string secret;    // what a client must present first
  int ready = -1;        // where the ready line goes (then closed)
  std::vector<std::pair<std::string, std::string>> env;  // the session's, added to every command's
  ShimEgress* egress = nullptr;  // --net proxy: the session's proxy (its lease usage, rotations)
  // A VM session's files (shim_vm.h): file_get/file_put requests go out on this SEQPACKET
  // socket as JSON with a "seq", and each answer comes back with it; -1: no such ops.
  int files = -1;
};

// Runs until the session is stopped (a client's stop, SIGTERM) or its init is gone.
void runShimLoop(const ShimConfig& cfg, const sandbox::RunOptions::SessionIo& io);

}  // namespace corral::daemon
