// SPDX-License-Identifier: Apache-2.0
// pause/resume: a session's processes in a freezer cgroup of their own (cgroup v1's freezer
// controller, the one this kind of host offers; a v2 host's cgroup.freeze is not done yet).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.h"

namespace corral::daemon {

struct Freezer {
  bool usable = false;
  std::string root;         // the v1 freezer hierarchy's mount point, e.g. /sys/fs/cgroup/freezer
  std::string description;  // for `corral doctor` and a refused pause
};
// Found once per daemon: v1 freezer mounted and writable by this daemon (root).
Freezer findFreezer();

// A session's cgroup: ROOT/corral-sessions/ID. Made with init in it before any command
// starts, so everything the session ever forks is in it too.
Result<void> freezerAdopt(const Freezer& f, const std::string& id, pid_t init_pid);
// FROZEN or THAWED, waited for (FREEZING passes once every task has stopped).
Result<void> freezerSet(const Freezer& f, const std::string& id, bool frozen);
// "FROZEN", "THAWED", "FREEZING", or "" when the session has no freezer cgroup.
std::string freezerState(const Freezer& f, const std::string& id);
// The pids in it (the host's view).
std::vector<pid_t> freezerTasks(const Freezer& f, const std::string& id);
// Thaws it (a frozen task cannot die), waits until its tasks are gone, removes it.
void freezerRemove(const Freezer& f, const std::string& id);

}  // namespace corral::daemon
