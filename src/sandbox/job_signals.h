// SPDX-License-Identifier: Apache-2.0
// What a signal to corral means for the run it supervises: one that ends the wait (the
// terminal's Ctrl-C, a hang-up, a polite kill) or a job-control stop.
#pragma once

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace corral::sandbox {

// Marks a signal corral forwards to its init (SI_QUEUE with this value), so init can tell it
// from a copy of a signal sent to corral's process group before init left that group: init
// drops the copies (corral forwards its own) and keeps what corral sent, which may arrive
// before init is running at all when the machine is busy.
inline constexpr int kForwardedByCorral = 0x636f7272;  // "corr"

// Sends sig to init through its pidfd, marked as forwarded. 0 or -1 (errno set).
inline int forwardToInit(int pidfd, int sig) {
  siginfo_t info{};
  info.si_signo = sig;
  info.si_code = SI_QUEUE;
  info.si_pid = ::getpid();
  info.si_uid = ::getuid();
  info.si_value.sival_int = kForwardedByCorral;
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, &info, 0));
}

// SIGINT, SIGTERM, SIGHUP, SIGQUIT: the caller wants corral to give up what it waits for.
constexpr bool endsTheWait(int sig) { return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT; }

// SIGTSTP, SIGTTIN, SIGTTOU: the job is being stopped (Ctrl-Z, the terminal in the background).
constexpr bool isJobStop(int sig) { return sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU; }

}  // namespace corral::sandbox
