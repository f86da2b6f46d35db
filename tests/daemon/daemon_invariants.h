// SPDX-License-Identifier: Apache-2.0
// What must hold of a daemon's state directory once it has reconciled (after kill -9s): no
// orphan process, mount, directory or freezer cgroup; no row in an impossible state; the
// store's integrity_check and the audit chain pass. Shared by the kill and warm pool suites.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon_fixture.h"

namespace corral::testing {

inline const std::string kFreezer = "/sys/fs/cgroup/freezer/corral-sessions/";
inline bool haveFreezer() { return ::geteuid() == 0 && fileExists("/sys/fs/cgroup/freezer/cgroup.procs"); }

struct Proc {
  pid_t ppid = 0;
  char state = '?';
  std::string cmdline;
};
std::map<pid_t, Proc> processes();
// The store, read by python's sqlite3 beside the running daemon (WAL): rows and integrity.
nlohmann::json storeDump(const std::string& db);
// Every id the daemon ever logged a session or pool member event for.
std::set<std::string> idsEverSeen(const Daemon& d);
// One line per violation; mark: a string in the argv of every command the workload started.
std::vector<std::string> violations(const Daemon& d, const std::string& mark, const std::set<std::string>& removed);
std::string joined(const std::vector<std::string>& lines);
// The violations, then the daemon's log lines about the ids they name.
std::string explained(const Daemon& d, const std::vector<std::string>& bad);

}  // namespace corral::testing
