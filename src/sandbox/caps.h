// SPDX-License-Identifier: Apache-2.0
// Capabilities: the command starts with none in any set.
#pragma once

namespace corral::sandbox::caps {

// Child side, async-signal-safe: empties the bounding and ambient sets, then the
// effective, permitted and inheritable sets, and sets no_new_privs. Returns 0 or errno.
// Order: the bounding set can only be dropped while CAP_SETPCAP is still held.
int dropAll();

}  // namespace corral::sandbox::caps
