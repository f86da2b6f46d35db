// SPDX-License-Identifier: Apache-2.0
// A VM session's shim: QEMU instead of a namespace sandbox, and a bridge that speaks the
// session init's packets (session_protocol.h) to the shim's loop on one side and the guest
// agent's session frames (vm/frame.h) on the other, so the loop is the same for both.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "daemon/session_spec.h"

namespace corral::daemon {

// Runs the session to its end (the loop's stop, SIGTERM, or the VM gone); the ready line or
// the error goes to `ready`. Returns the shim's exit code.
int runVmShim(int dir, int listen, const std::string& secret, int ready, int log, const SessionSpec& spec);

}  // namespace corral::daemon
