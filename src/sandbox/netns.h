// SPDX-License-Identifier: Apache-2.0
// Network namespace: loopback only.
#pragma once

namespace corral::sandbox::netns {

// Child side, inside the fresh network namespace: brings "lo" up. Returns 0 or errno.
int bringUpLoopback();

}  // namespace corral::sandbox::netns
