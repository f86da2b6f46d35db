// SPDX-License-Identifier: Apache-2.0
// Network namespace: loopback only.
#pragma once

namespace corral::sandbox::netns {

// Child side, inside the fresh network namespace: brings "lo" up. Returns 0 or errno.
int bringUpLoopback();

// Child side: a TCP listener on 127.0.0.1:port (close-on-exec, non-blocking), the sandbox's
// end of the egress proxy. Returns the fd, or -errno.
int listenLoopback(unsigned short port);

// Init side: accepts every pending connection on listen_fd and hands each accepted socket
// to the host over channel (SCM_RIGHTS, one fd per message), then closes its own copy. A
// connection the host cannot take is closed (the client sees a reset). Async-signal-safe.
void relayPending(int listen_fd, int channel);

}  // namespace corral::sandbox::netns
