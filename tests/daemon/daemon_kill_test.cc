// SPDX-License-Identifier: Apache-2.0
// kill -9 of the daemon at 20 random points of a mixed workload (create, exec, cp in and out,
// pause/resume where a freezer exists, rm), restarted each time; afterwards nothing is half
// done: no orphan process, cgroup, mount or directory, no session in an impossible state,
// every finished command's status kept, the audit log and the SQLite store intact.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "daemon_fixture.h"
#include "daemon_invariants.h"

namespace corral::testing {
namespace {

using nlohmann::json;
constexpr int kKills = 20;


// What the workload knows for sure: an answered request is a fact, an unanswered one (the
// daemon died under it) may or may not have happened.
struct Model {
  std::mutex mu;
  std::set<std::string> sessions;  // answered creates, and creates found listed afterwards
  std::set<std::string> removed;   // answered removes
  struct Cmd {
    std::string session;
    int64_t n;
    int expect;  // exit code; -1: a long-running command (still running at the end)
  };
  std::vector<Cmd> cmds;
  std::map<std::pair<std::string, std::string>, std::string> files;  // (session, name) -> bytes, known
  std::vector<std::string> problems;                                 // seen during the run
  std::map<std::string, int> ops;                                    // counts, for the log
};

std::string sessionsBody(const std::string& name) {
  json limits = {{"workspace_size", "8M"}};
  if (::geteuid() == 0) limits["memory"] = "256M";  // a (v1) limits cgroup per session as root
  else limits["allow_weaker"] = {"workspace-size"};
  return json{{"name", name}, {"limits", limits}}.dump();
}

class Workload {
 public:
  Workload(const Daemon& d, Model& m, uint32_t seed, std::string mark) : d_(d), m_(m), rng_(seed), mark_(std::move(mark)) {}

  void step() {
    const std::vector<std::string> live = liveSessions();
    const int roll = pick(100);
    if (live.size() < 2 || (roll < 8 && live.size() < 4)) return create();
    const std::string id = live[static_cast<size_t>(pick(static_cast<int>(live.size())))];
    if (roll < 45) return exec(id, false);
    if (roll < 50) return exec(id, true);
    if (roll < 65) return put(id);
    if (roll < 77) return get(id);
    if (roll < 90) return freeze(id, pick(2) == 0);
    return remove(id);
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  void count(const std::string& op) {
    std::lock_guard lock(m_.mu);
    ++m_.ops[op];
  }
  std::vector<std::string> liveSessions() {
    // Sessions answered, plus what the daemon lists (a create whose answer the kill took).
    auto listed = d_.curl("GET", "/v1/sessions");
    std::lock_guard lock(m_.mu);
    const json list = listed.json();
    if (listed.status == 200 && list.is_object() && list["sessions"].is_array())
      for (const json& s : list["sessions"])
        if (s["name"].get<std::string>().rfind(mark_, 0) == 0) m_.sessions.insert(s["id"].get<std::string>());
    std::vector<std::string> out;
    for (const std::string& id : m_.sessions)
      if (!m_.removed.count(id)) out.push_back(id);
    return out;
  }
  void create() {
    count("create");
    auto r = d_.curl("POST", "/v1/sessions", sessionsBody(mark_ + "-" + std::to_string(pick(1 << 30))));
    const json j = r.json();
    if (r.status != 201 || !j.is_object() || !j["id"].is_string()) return;  // a body the kill cut short: unanswered
    std::lock_guard lock(m_.mu);
    m_.sessions.insert(j["id"].get<std::string>());
  }
  void exec(const std::string& id, bool long_running) {
    count(long_running ? "exec-long" : "exec");
    const int code = pick(100);
    // The mark in argv ($0 of sh) finds the command's processes on the host afterwards.
    json argv = long_running ? json{"sh", "-c", "sleep 600; true", mark_} : json{"sh", "-c", "exit " + std::to_string(code), mark_};
    auto r = d_.curl("POST", "/v1/sessions/" + id + "/commands", json{{"argv", argv}}.dump());
    const json j = r.json();
    if (r.status != 201 || !j.is_object() || !j["id"].is_number_integer()) return;
    std::lock_guard lock(m_.mu);
    m_.cmds.push_back({id, j["id"].get<int64_t>(), long_running ? -1 : code});
  }
  void put(const std::string& id) {
    count("cp-in");
    const std::string name = "f" + std::to_string(pick(4));
    const std::string bytes = "content-" + std::to_string(pick(1 << 30)) + "\n";
    {
      std::lock_guard lock(m_.mu);
      m_.files.erase({id, name});  // unknown until answered
    }
    auto r = d_.curl("PUT", "/v1/sessions/" + id + "/files/" + name, "", {"-H", "Content-Type: application/octet-stream", "--data-binary", bytes});
    if (r.status != 201) return;
    std::lock_guard lock(m_.mu);
    m_.files[{id, name}] = bytes;
  }
  void get(const std::string& id) {
    count("cp-out");
    std::string name, want;
    {
      std::lock_guard lock(m_.mu);
      for (const auto& [key, bytes] : m_.files)
        if (key.first == id && (name.empty() || pick(2) == 0)) name = key.second, want = bytes;
    }
    if (name.empty()) return;
    auto r = d_.curl("GET", "/v1/sessions/" + id + "/files/" + name);
    std::lock_guard lock(m_.mu);
    // A PUT racing this one (the other thread) may have changed it: only a known file counts.
    auto it = m_.files.find({id, name});
    // A kill mid-body leaves a prefix (curl keeps the status line it read): not a wrong answer.
    if (r.status == 200 && it != m_.files.end() && it->second == want && r.body != want && want.rfind(r.body, 0) != 0)
      m_.problems.push_back("session " + id + " file " + name + ": read back other bytes than were written");
  }
  void freeze(const std::string& id, bool pause) {
    if (!haveFreezer()) return;
    count(pause ? "pause" : "resume");
    (void)d_.curl("POST", "/v1/sessions/" + id + (pause ? "/pause" : "/resume"));
  }
  void remove(const std::string& id) {
    count("rm");
    auto r = d_.curl("DELETE", "/v1/sessions/" + id);
    if (r.status != 200 && r.status != 404) return;
    std::lock_guard lock(m_.mu);
    m_.removed.insert(id);
  }

  const Daemon& d_;
  Model& m_;
  std::mt19937 rng_;
  std::string mark_;
};

uint32_t seedOf() {
  if (const char* s = std::getenv("CORRAL_KILL_SEED")) return static_cast<uint32_t>(std::strtoul(s, nullptr, 10));
  return std::random_device{}();
}

// ---- daemon.survives-kill-at-any-point ----

TEST(DaemonSurvivesKillAtAnyPoint, TwentyKillsOfAMixedWorkloadLeaveNothingHalfDone) {
  const uint32_t seed = seedOf();
  std::printf("daemon kill test: seed %u (replay with CORRAL_KILL_SEED=%u)\n", seed, seed);
  RecordProperty("seed", std::to_string(seed));
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string mark = "kill9-" + std::to_string(seed);
  Model m;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      Workload w(d, m, seed + t, mark);
      while (!stop) w.step();
    });
  std::mt19937 rng(seed ^ 0x9e3779b9u);
  std::vector<int> delays;
  for (int i = 0; i < kKills; ++i) {
    const int ms = std::uniform_int_distribution<int>(30, 1200)(rng);
    delays.push_back(ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    d.kill9();
    if (!d.start()) {
      stop = true;
      for (auto& t : threads) t.join();
      FAIL() << "seed " << seed << ": the daemon did not start again after kill " << i + 1 << ": " << d.stderrText();
    }
  }
  stop = true;
  for (auto& t : threads) t.join();
  std::string delay_text;
  for (int ms : delays) delay_text += std::to_string(ms) + " ";
  std::string ops_text;
  for (const auto& [op, n] : m.ops) ops_text += op + "=" + std::to_string(n) + " ";
  std::printf("kill delays (ms): %s\nops: %s\n", delay_text.c_str(), ops_text.c_str());
  EXPECT_GT(m.ops["exec"], 0) << "the workload never ran a command";
  EXPECT_TRUE(m.problems.empty()) << "seed " << seed << ":" << joined(m.problems);

  // Every command that was answered: its exit status (paused sessions resumed first: a frozen
  // command cannot end).
  for (const std::string& id : m.sessions)
    if (!m.removed.count(id) && haveFreezer()) (void)d.curl("POST", "/v1/sessions/" + id + "/resume");
  for (const Model::Cmd& c : m.cmds) {
    if (m.removed.count(c.session)) continue;
    json cmd;
    const bool ended = eventually([&] {
      auto r = d.curl("GET", "/v1/sessions/" + c.session + "/commands/" + std::to_string(c.n));
      if (r.status == 404) return true;  // its session went by an rm whose answer the kill took
      cmd = r.json();
      return c.expect < 0 ? cmd["state"] == "running" : cmd["state"] == "exited";
    });
    if (cmd.is_null()) continue;
    EXPECT_TRUE(ended) << claim("daemon.survives-kill-at-any-point", "seed " + std::to_string(seed) + ": command " + c.session + "/" +
                                                                         std::to_string(c.n) + " is " + cmd.dump());
    if (c.expect >= 0 && ended) {
      EXPECT_EQ(cmd["exit_code"], c.expect) << claim("daemon.survives-kill-at-any-point", "an exit status was lost: " + cmd.dump());
    }
  }
  const std::vector<std::string> bad = violations(d, mark, m.removed);
  EXPECT_TRUE(bad.empty()) << claim("daemon.survives-kill-at-any-point", "seed " + std::to_string(seed) + ":" + explained(d, bad));

  // And what is left is removed by rm, whole.
  for (const json& s : d.curl("GET", "/v1/sessions").json()["sessions"]) {
    auto r = d.curl("DELETE", "/v1/sessions/" + s["id"].get<std::string>());
    EXPECT_EQ(r.status, 200) << r.body;
    m.removed.insert(s["id"].get<std::string>());
  }
  const std::vector<std::string> after = violations(d, mark, m.removed);
  EXPECT_TRUE(after.empty()) << claim("daemon.survives-kill-at-any-point", "after rm of everything:" + joined(after));
}

TEST(DaemonSurvivesKillAtAnyPoint, ControlAnUnrecordedShimIsFoundAndKilledAtStart) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  auto a = d.curl("POST", "/v1/sessions", sessionsBody("ctl-a"));
  auto b = d.curl("POST", "/v1/sessions", sessionsBody("ctl-b"));
  ASSERT_EQ(a.status, 201) << a.body;
  ASSERT_EQ(b.status, 201) << b.body;
  const std::string gone = a.json()["id"], kept = b.json()["id"];
  auto cmd = d.curl("POST", "/v1/sessions/" + gone + "/commands", json{{"argv", {"sh", "-c", "sleep 600; true", "ctl-mark"}}}.dump());
  ASSERT_EQ(cmd.status, 201) << cmd.body;
  d.kill9();
  // What a store that lost a session's row leaves: its shim, init and command run on, its
  // directory stays. The checker must see it (the control of the test above)...
  RunResult py = run({"/usr/bin/python3", "-c",
                      "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.execute('DELETE FROM sessions WHERE id=?', (sys.argv[2],))\nc.commit()\n",
                      d.stateDir() + "/state.db", gone});
  ASSERT_EQ(py.exit_code, 0) << py.describe();
  const std::vector<std::string> before = violations(d, "ctl-mark", {});
  const std::string text = joined(before);
  EXPECT_NE(text.find("orphan shim"), std::string::npos) << text;
  EXPECT_NE(text.find("orphan command process"), std::string::npos) << text;
  // ...and the daemon's start must end them: a process of no recorded session is killed.
  ASSERT_TRUE(d.start()) << d.stderrText();
  EXPECT_TRUE(eventually([&] {
    for (const auto& [pid, p] : processes())
      if (p.state != 'Z' && p.cmdline.find(std::string(1, '\0') + "ctl-mark") != std::string::npos) return false;
    return true;
  })) << claim("daemon.survives-kill-at-any-point", "a command of no recorded session outlived the daemon's start");
  EXPECT_NE(d.stderrText().find("event=orphan_killed"), std::string::npos) << d.stderrText();
  EXPECT_EQ(d.curl("GET", "/v1/sessions/" + kept).json()["state"], "running") << "control: the recorded session is adopted";
  std::vector<std::string> left = violations(d, "ctl-mark", {});
  // Its directory is kept (files of no recorded session are not deleted, only reported).
  std::erase_if(left, [](const std::string& l) { return l.rfind("leftover directory", 0) == 0; });
  EXPECT_TRUE(left.empty()) << joined(left);
}

}  // namespace
}  // namespace corral::testing
