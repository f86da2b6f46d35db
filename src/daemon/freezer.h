// SPDX-License-Identifier: Apache-2.0
// pause/resume: a session's processes in a freezer cgroup of their own, cgroup v1's freezer
// controller (freezer.state) or cgroup v2's core freezer (cgroup.freeze, cgroup.events).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.h"

namespace corral::daemon {

enum class FreezerChoice { kAuto, kV1, kV2 };

struct Freezer {
  bool usable = false;
  int version = 0;          // 1 or 2 when usable
  std::string root;         // the parent of the sessions' cgroups, e.g. /sys/fs/cgroup/freezer/corral-sessions
  std::string description;  // for `corral doctor` and a refused pause
  // "cgroup-v1", "cgroup-v2" or "none" (session show's "freezer").
  std::string name() const { return usable ? "cgroup-v" + std::to_string(version) : "none"; }
};
// Found once per daemon. kAuto: the v1 freezer when it is mounted and writable (root), else a
// cgroup v2 hierarchy whose root (or the daemon's own, delegated cgroup) it can make children
// in; kV1 / kV2: only that one.
Freezer findFreezer(FreezerChoice choice = FreezerChoice::kAuto);

// A session's cgroup: ROOT/ID. Made with init in it before any command starts, so
// everything the session ever forks is in it too.
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
