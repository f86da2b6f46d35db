// SPDX-License-Identifier: Apache-2.0
// A session's init: after exec's setup it stays pid 1 and starts each command the shim asks
// for (session_protocol.h) under the same uid, filters and limits, reaping and reporting them.
#pragma once

#include <signal.h>

#include "sandbox/child.h"

namespace corral::sandbox::session {

// Never returns: init exits when the shim's end of the socket closes (every process of the
// sandbox goes with it). Async-signal-safe and allocation-free, as the rest of init.
[[noreturn]] void serve(const child::Context& ctx, const sigset_t& waited, int proxy_listen);

}  // namespace corral::sandbox::session
