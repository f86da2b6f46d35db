// SPDX-License-Identifier: Apache-2.0
// A one-shot nudge of a new task to another CPU (cpu_placement.h).
#include "sandbox/cpu_placement.h"

namespace corral::sandbox::placement {

bool othersThanMine(const cpu_set_t& whole, cpu_set_t* others) {
  const int mine = ::sched_getcpu();
  if (mine < 0 || mine >= CPU_SETSIZE || CPU_COUNT(&whole) < 2 || !CPU_ISSET(mine, &whole)) return false;
  *others = whole;
  CPU_CLR(mine, others);
  return true;
}

bool nudgeOffMyCpu(pid_t pid, const cpu_set_t& whole) {
  cpu_set_t others;
  if (!othersThanMine(whole, &others)) return false;
  if (::sched_setaffinity(pid, sizeof others, &others) != 0) return false;
  // The restore must not be skipped: a task left pinned off this CPU would carry the pin to
  // everything it starts. Should it fail (the task has just exited: ESRCH), nothing is left.
  (void)::sched_setaffinity(pid, sizeof whole, &whole);
  return true;
}

QuietBirth::QuietBirth() {
  if (::sched_getscheduler(0) != SCHED_OTHER) return;
  const sched_param none{};
  active_ = ::sched_setscheduler(0, SCHED_BATCH, &none) == 0;
}

QuietBirth::~QuietBirth() {
  if (active_) restorePolicy();
}

void restorePolicy() {
  const sched_param none{};
  (void)::sched_setscheduler(0, SCHED_OTHER, &none);
}

}  // namespace corral::sandbox::placement
