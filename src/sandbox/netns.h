// SPDX-License-Identifier: Apache-2.0
// Network namespace: loopback only.
#pragma once

#include <sched.h>

namespace corral::sandbox::netns {

// Init side: fresh network and IPC namespaces made on the other CPU while init builds the
// mounts. A network namespace costs about 1 ms (every pernet subsystem initialises), the
// largest kernel cost of a launch and as much as all the mounts; an IPC namespace about 0.1
// ms (its sysctls and its internal mqueue mount). So init clones a helper (sharing its memory
// and fd table, making raw system calls only: netns.cc) that unshares both
// (owned by the sandbox's user namespace, like one clone3 would make them), brings "lo" up and
// exits; init joins both with setns() before anything untrusted runs. Until then init itself
// is still in the caller's network and IPC namespaces: it runs only corral's code.
struct Maker {
  int pid = -1;
  int ready = -1;        // the helper reports here once "lo" is up
  int ready_write = -1;  // its write end (the fd table is shared with the helper)
  void* stack = nullptr; // the helper runs on it, in init's memory, until joinMaker reaps it
};
// Starts the helper, kept off init's CPU within caller_cpus (corral's CPUs, read before the
// clone; nullptr: init's own). Returns 0 or errno. Needs CAP_SYS_ADMIN in the caller's user
// namespace.
int startMaker(Maker* maker, const cpu_set_t* caller_cpus);
// Waits for and reaps the helper, then moves the caller into its namespaces. Returns 0 or
// errno. Async-signal-safe.
int joinMaker(Maker* maker);

// Child side: a TCP listener on 127.0.0.1:port (close-on-exec, non-blocking), the sandbox's
// end of the egress proxy. Returns the fd, or -errno.
int listenLoopback(unsigned short port);

// Init side: accepts every pending connection on listen_fd and hands each accepted socket
// to the host over channel (SCM_RIGHTS, one fd per message), then closes its own copy. A
// connection the host cannot take is closed (the client sees a reset). Async-signal-safe.
void relayPending(int listen_fd, int channel);

}  // namespace corral::sandbox::netns
