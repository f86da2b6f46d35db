// SPDX-License-Identifier: Apache-2.0
// pause/resume: a session's processes in a freezer cgroup of their own, cgroup v1's freezer
// controller (freezer.state) or cgroup v2's core freezer (cgroup.freeze, cgroup.events). On
// v2, a session whose init the sandbox put in a limits cgroup is frozen there, in place.
#pragma once

#include <sys/types.h>

#include <cstdint>
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
  std::string mount;        // v2: the cgroup2 hierarchy's mount point
  // Where each session's directory is (RECORDS/ID): an in-place session's record
  // (freezer_record.h) is kept there. "" (corral doctor): nothing is frozen in place.
  std::string records;
  // "cgroup-v1", "cgroup-v2" or "none" (session show's "freezer").
  std::string name() const { return usable ? "cgroup-v" + std::to_string(version) : "none"; }
};
// Found once per daemon. kAuto: the v1 freezer when it is mounted and writable (root), else a
// cgroup v2 hierarchy whose root (or the daemon's own, delegated cgroup) it can make children
// in; kV1 / kV2: only that one.
Freezer findFreezer(FreezerChoice choice = FreezerChoice::kAuto, std::string records = "");

// A session's cgroup: ROOT/ID. Made with init in it before any command starts, so
// everything the session ever forks is in it too. On v2, when init (pid and /proc start
// time) sits in a corral limits cgroup, that cgroup is the session's and init stays in it
// (moving it out would lift its limits): RECORDS/ID/freezer-cgroup names it from then on.
Result<void> freezerAdopt(const Freezer& f, const std::string& id, pid_t init_pid, uint64_t init_start);
// FROZEN or THAWED, waited for (FREEZING passes once every task has stopped).
Result<void> freezerSet(const Freezer& f, const std::string& id, bool frozen);
// "FROZEN", "THAWED", "FREEZING", or "" when the session has no freezer cgroup.
std::string freezerState(const Freezer& f, const std::string& id);
// The pids in it (the host's view).
std::vector<pid_t> freezerTasks(const Freezer& f, const std::string& id);
// Thaws it (a frozen task cannot die), waits until its tasks are gone, removes it. An
// in-place limits cgroup is thawed and forgotten, never removed: the sandbox's guard owns it.
void freezerRemove(const Freezer& f, const std::string& id);

}  // namespace corral::daemon
