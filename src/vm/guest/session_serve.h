// SPDX-License-Identifier: Apache-2.0
// Session mode of the guest agent: one namespace sandbox (sandbox::runLinux in session mode)
// for the guest's life, and the commands the host sends run in it one by one or at once,
// each under its own id (docs/vm.md, "Control protocol").
#pragma once

#include "sandbox/spec.h"
#include "vm/guest/channel.h"

namespace corral::vm::guest {

// Returns when the host's channel closes, a frame is malformed, or the sandbox's init is gone;
// the caller powers the guest off. spec.workspace is the mounted workspace disk.
void serveSession(Channel& ch, sandbox::SandboxSpec spec);

}  // namespace corral::vm::guest
