// SPDX-License-Identifier: Apache-2.0
// Invariants of a reconciled state directory (daemon_invariants.h).
#include "daemon_invariants.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <regex>
#include <sstream>

namespace corral::testing {

using nlohmann::json;


std::map<pid_t, Proc> processes() {
  std::map<pid_t, Proc> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    const std::string stat = fileText(std::string("/proc/") + e->d_name + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 4 > stat.size()) continue;
    Proc p;
    p.state = stat[paren + 2];
    p.ppid = static_cast<pid_t>(std::strtol(stat.c_str() + paren + 4, nullptr, 10));
    p.cmdline = fileText(std::string("/proc/") + e->d_name + "/cmdline");
    out[static_cast<pid_t>(pid)] = p;
  }
  ::closedir(d);
  return out;
}

// The store, read by python's sqlite3 beside the running daemon (WAL): rows and integrity.
json storeDump(const std::string& db) {
  const char* script =
      "import json, sqlite3, sys\n"
      "c = sqlite3.connect(sys.argv[1])\n"
      "print(json.dumps({'integrity': c.execute('PRAGMA integrity_check').fetchone()[0],\n"
      "  'sessions': [dict(zip(['id', 'state', 'shim_pid', 'pool'], r)) for r in c.execute('SELECT id, state, shim_pid, pool FROM sessions')],\n"
      "  'commands': [dict(zip(['session', 'cmd', 'state', 'exit_code'], r)) for r in\n"
      "               c.execute('SELECT session_id, cmd, state, exit_code FROM commands')]}))\n";
  RunResult r = run({"/usr/bin/python3", "-c", script, db});
  return json::parse(r.out, nullptr, false);
}

// Every id the daemon ever logged a session event for (creates undone by reconcile included).
std::set<std::string> idsEverSeen(const Daemon& d) {
  std::set<std::string> ids;
  const std::string text = d.stderrText() + fileText(d.stateDir() + "/audit.jsonl");
  static const std::regex kId("(?:session|member)[=\"]+:?\"?([0-9a-f]{16})");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kId); it != std::sregex_iterator(); ++it) ids.insert((*it)[1]);
  return ids;
}

// Everything that must hold once the daemon has reconciled: one line per violation.
std::vector<std::string> violations(const Daemon& d, const std::string& mark, const std::set<std::string>& removed) {
  std::vector<std::string> out;
  const std::string sessions_dir = d.stateDir() + "/sessions/";
  json db = storeDump(d.stateDir() + "/state.db");
  if (!db.is_object()) return {"the store could not be read"};
  if (db["integrity"] != "ok") out.push_back("PRAGMA integrity_check: " + db["integrity"].dump());
  std::map<std::string, json> live;  // id -> row
  for (const json& s : db["sessions"]) {
    const std::string id = s["id"], state = s["state"], pool = s["pool"];
    // A warm pool member (warm_pool.h) is live when pooled; a session when running or paused.
    const bool ok = pool.empty() ? state == "running" || state == "paused" : state == "pooled";
    if (!ok) out.push_back((pool.empty() ? "session " : "pool member ") + id + " is in state " + state);
    if (removed.count(id)) out.push_back("session " + id + " was removed (answered 200) but is still recorded");
    live[id] = s;
  }
  // Processes: every shim is the recorded shim of a live session; every process of a command
  // (its mark in argv) descends from one.
  const auto procs = processes();
  std::set<pid_t> shims;
  for (const auto& [pid, p] : procs) {
    const std::string prefix = std::string("__session-shim") + '\0' + sessions_dir;
    const size_t at = p.cmdline.find(prefix);
    if (at == std::string::npos || p.state == 'Z') continue;
    const std::string id = p.cmdline.substr(at + prefix.size(), 16);
    auto it = live.find(id);
    if (it == live.end() || it->second["shim_pid"] != pid)
      out.push_back("orphan shim pid " + std::to_string(pid) + " of session " + id + " (not the recorded shim of a live session)");
    else
      shims.insert(pid);
  }
  for (const auto& [id, row] : live)
    if (!shims.count(row["shim_pid"].get<pid_t>())) out.push_back("live session " + id + " has no shim process");
  for (const auto& [pid, p] : procs) {
    if (p.state == 'Z' || p.cmdline.find(std::string(1, '\0') + mark) == std::string::npos) continue;
    bool under = false;
    for (pid_t up = p.ppid; up > 1 && !under; up = procs.count(up) ? procs.at(up).ppid : 0) under = shims.count(up) > 0;
    if (!under) out.push_back("orphan command process pid " + std::to_string(pid) + " (under no live session's shim)");
  }
  // Directories, mounts, freezer cgroups: only of live sessions.
  if (DIR* dir = ::opendir(sessions_dir.c_str())) {
    while (dirent* e = ::readdir(dir))
      if (e->d_name[0] != '.' && !live.count(e->d_name)) out.push_back(std::string("leftover directory sessions/") + e->d_name);
    ::closedir(dir);
  }
  for (const std::string& m : mountsUnder(d.stateDir())) {
    const std::string id = m.rfind(sessions_dir, 0) == 0 ? m.substr(sessions_dir.size(), 16) : "";
    if (!live.count(id)) out.push_back("leftover mount " + m);
  }
  for (const std::string& id : idsEverSeen(d)) {
    if (live.count(id)) continue;
    if (fileExists(kFreezer + id)) out.push_back("leftover freezer cgroup of session " + id);
  }
  for (const auto& [id, row] : live) {
    if (!haveFreezer()) continue;
    std::string st = fileText(kFreezer + id + "/freezer.state");
    while (!st.empty() && st.back() == '\n') st.pop_back();
    const std::string want = row["state"] == "paused" ? "FROZEN" : "THAWED";
    if (st != want) out.push_back("session " + id + " is " + row["state"].get<std::string>() + " but its freezer says '" + st + "'");
  }
  // Commands: none left half started; an ended one has its status.
  for (const json& c : db["commands"]) {
    const std::string state = c["state"];
    if (state == "starting") out.push_back("command " + c["session"].get<std::string>() + "/" + c["cmd"].dump() + " is still starting");
  }
  RunResult verify = run({corralBin(), "daemon", "verify-log", d.stateDir() + "/audit.jsonl"});
  if (verify.exit_code != 0) out.push_back("the audit log does not verify: " + verify.describe());
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += "\n  " + l;
  return s;
}

// For a failure: the violations, then the daemon's log lines about the sessions they name.
std::string explained(const Daemon& d, const std::vector<std::string>& bad) {
  std::string out = joined(bad);
  static const std::regex kId("[0-9a-f]{16}");
  std::set<std::string> ids;
  for (const std::string& l : bad)
    for (auto it = std::sregex_iterator(l.begin(), l.end(), kId); it != std::sregex_iterator(); ++it) ids.insert(it->str());
  std::istringstream log(d.stderrText());
  for (std::string line; std::getline(log, line);)
    for (const std::string& id : ids)
      if (line.find(id) != std::string::npos) {
        out += "\n    log: " + line.substr(0, 300);
        break;
      }
  return out;
}

}  // namespace corral::testing
