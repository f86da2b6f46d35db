// SPDX-License-Identifier: Apache-2.0
// Where a just-created task starts: a nudge to the other CPU, never a pin.
#pragma once

#include <sched.h>
#include <sys/types.h>

namespace corral::sandbox::placement {

// `whole` without the CPU the caller runs on. False when that leaves nothing to use: one CPU
// in `whole`, ours not among them, or a failed call.
bool othersThanMine(const cpu_set_t& whole, cpu_set_t* others);

// Moves `pid`, a task that has not run yet or is waiting to, to a CPU of `whole` (its affinity
// mask, which it inherited from the caller) other than the caller's, then gives it back
// `whole` at once. A queued task stays on a CPU it is still
// allowed, so it starts there; from then on the scheduler may move it as it likes, and a busy
// or real-time task on that CPU cannot hold it (nothing stays pinned). Best effort: with one
// allowed CPU, or a failed call, placement stays the scheduler's. Returns true if it moved.
bool nudgeOffMyCpu(pid_t pid, const cpu_set_t& whole);

// While alive, a task the caller creates does not preempt the caller at birth: the caller runs
// as SCHED_BATCH, which the child inherits, and a SCHED_BATCH task woken (or born) on a CPU
// never preempts the one running there. The caller can then nudge the child to another CPU
// before it runs at all. Only a caller of plain SCHED_OTHER is changed (a real-time or idle
// caller's policy is its own business); active() says whether the child must go back to
// SCHED_OTHER as its first act (restorePolicy(), or the same system call made raw by a child
// that shares the caller's memory). The destructor restores the caller. Used for the proxy
// process of a --net proxy run (cli/egress_process_launch.cc); for init it bought nothing
// (bench/findings.md, session 11).
class QuietBirth {
 public:
  QuietBirth();
  ~QuietBirth();
  QuietBirth(const QuietBirth&) = delete;
  QuietBirth& operator=(const QuietBirth&) = delete;
  bool active() const { return active_; }

 private:
  bool active_ = false;
};

// The child's side: back to SCHED_OTHER, the policy its caller had.
void restorePolicy();

}  // namespace corral::sandbox::placement
