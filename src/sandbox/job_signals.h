// SPDX-License-Identifier: Apache-2.0
// What a signal to corral means for the run it supervises: one that ends the wait (the
// terminal's Ctrl-C, a hang-up, a polite kill) or a job-control stop.
#pragma once

#include <signal.h>

namespace corral::sandbox {

// SIGINT, SIGTERM, SIGHUP, SIGQUIT: the caller wants corral to give up what it waits for.
constexpr bool endsTheWait(int sig) { return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT; }

// SIGTSTP, SIGTTIN, SIGTTOU: the job is being stopped (Ctrl-Z, the terminal in the background).
constexpr bool isJobStop(int sig) { return sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU; }

}  // namespace corral::sandbox
