// SPDX-License-Identifier: Apache-2.0
// pause/resume with cgroup v2's core freezer (`corral daemon --freezer v2`): cgroup.freeze,
// and "frozen 1" in cgroup.events; a paused session's busy loop gets no CPU until resumed.
// Also a session whose init is in a v2 limits cgroup, frozen in place: on this hybrid host no
// session gets one (the cgroup2 hierarchy has no memory or pids controller), so a stand-in
// named as the sandbox names one, with no controllers, takes its place (cgroup.freeze is in
// every non-root v2 cgroup).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "base/random_id.h"
#include "daemon/freezer.h"
#include "daemon/shim.h"
#include "daemon_fixture.h"

namespace corral::testing {
namespace {

// The cgroup2 hierarchy's mount point, "" when none is mounted (or it has no cgroup.procs).
std::string v2Mount() {
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream fields(line);
    std::string f, point;
    for (int i = 0; i < 5 && fields >> f; ++i) point = f;
    return fileExists(point + "/cgroup.procs") ? point : "";
  }
  return "";
}

// usage_usec of the session's cgroup: every process in it, those that exited included.
uint64_t cpuUsec(const std::string& cg) {
  std::istringstream in(fileText(cg + "/cpu.stat"));
  for (std::string key, value; in >> key >> value;)
    if (key == "usage_usec") return std::strtoull(value.c_str(), nullptr, 10);
  return 0;
}

std::string frozenLine(const std::string& cg) {
  std::istringstream in(fileText(cg + "/cgroup.events"));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("frozen ", 0) == 0) return line;
  return "";
}

// The daemon started, and one session made in it; "" when either failed.
std::string startWithASession(Daemon& d) { return d.start() ? d.createSession() : ""; }

// ---- daemon.paused-session-stopped (cgroup v2) ----

TEST(DaemonPausedSessionStopped, RootV2CgroupFreezeStopsASessionUntilResumed) {
  CORRAL_REQUIRE_ROOT("the cgroup v2 hierarchy's root is root's on this host");
  const std::string mount = v2Mount();
  if (mount.empty()) GTEST_SKIP() << "no cgroup v2 hierarchy mounted on this host";
  Daemon d({"--freezer", "v2"});
  const std::string id = startWithASession(d);
  ASSERT_FALSE(id.empty()) << d.stderrText();
  const std::string cg = mount + "/corral-sessions/" + id;
  ASSERT_TRUE(fileExists(cg + "/cgroup.freeze")) << "the session has no v2 cgroup: " << d.stderrText();
  auto shown = d.curl("GET", "/v1/sessions/" + id).json();
  EXPECT_EQ(shown["freezer"], "cgroup-v2") << shown.dump();
  ASSERT_EQ(sessionExec(d, id, {"sh", "-c", "while :; do :; done >/dev/null 2>&1 &"}).exit_code, 0);
  // Control: running, the burner accrues CPU time.
  const uint64_t start = cpuUsec(cg);
  ASSERT_TRUE(eventually([&] { return cpuUsec(cg) > start + 50'000; })) << "the burner never ran";
  RunResult pause = d.cli({"session", "pause", id});
  ASSERT_EQ(pause.exit_code, 0) << pause.describe();
  EXPECT_EQ(fileText(cg + "/cgroup.freeze"), "1\n");
  EXPECT_EQ(frozenLine(cg), "frozen 1");
  EXPECT_EQ(d.curl("GET", "/v1/sessions/" + id).json()["state"], "paused");
  // Observed over a window (the measurement itself, not a synchronisation): no CPU at all.
  const uint64_t frozen = cpuUsec(cg);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(cpuUsec(cg), frozen) << claim("daemon.paused-session-stopped", "a session frozen by cgroup.freeze used CPU");
  EXPECT_EQ(sessionExec(d, id, {"true"}).exit_code, 125) << "a command in a paused session";
  // Paused survives a daemon restart: the state is read back from cgroup.events.
  d.kill9();
  ASSERT_TRUE(d.start()) << d.stderrText();
  EXPECT_EQ(d.curl("GET", "/v1/sessions/" + id).json()["state"], "paused");
  ASSERT_EQ(d.cli({"session", "resume", id}).exit_code, 0);
  EXPECT_EQ(frozenLine(cg), "frozen 0");
  const uint64_t resumed = cpuUsec(cg);
  EXPECT_TRUE(eventually([&] { return cpuUsec(cg) > resumed + 50'000; })) << "resume did not let it run again";
  EXPECT_EQ(sessionExec(d, id, {"echo", "back"}).out, "back\n");
  // rm of a paused session leaves no cgroup behind.
  ASSERT_EQ(d.cli({"session", "pause", id}).exit_code, 0);
  ASSERT_EQ(d.cli({"session", "rm", id}).exit_code, 0);
  EXPECT_FALSE(fileExists(cg)) << "the v2 cgroup outlived rm";
  EXPECT_TRUE(shimProcesses(d.stateDir()).empty());
}

TEST(DaemonPausedSessionStopped, DoctorAndShowSayWhichFreezer) {
  RunResult doctor = run({corralBin(), "doctor", "--json"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(doctor.out, m, std::regex("\"session-pause\": *\"([^\"]*)\""))) << doctor.describe();
  const std::string pause = m[1];
  EXPECT_TRUE(pause.find("cgroup v1 freezer") != std::string::npos || pause.find("cgroup v2 freezer") != std::string::npos ||
              pause.rfind("none", 0) == 0)
      << pause;
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  const std::string freezer = d.curl("GET", "/v1/sessions/" + id).json().value("freezer", "");
  // What the session says matches what the daemon found and doctor described.
  if (pause.rfind("none", 0) == 0) EXPECT_EQ(freezer, "none");
  else EXPECT_EQ(freezer, pause.find("v1") != std::string::npos ? "cgroup-v1" : "cgroup-v2") << pause;
  EXPECT_NE(d.stderrText().find("freezer=" + freezer), std::string::npos) << d.stderrText();
}

// ---- daemon.paused-session-stopped (a cgroup v2 limits cgroup, frozen in place) ----

std::vector<pid_t> pidsIn(const std::string& cg) {
  std::istringstream in(fileText(cg + "/cgroup.procs"));
  std::vector<pid_t> out;
  for (long pid; in >> pid;) out.push_back(static_cast<pid_t>(pid));
  return out;
}

bool contains(const std::vector<pid_t>& pids, pid_t pid) { return std::find(pids.begin(), pids.end(), pid) != pids.end(); }

// A process's cgroup v2 path, the "0::" line of /proc/PID/cgroup.
std::string v2PathOf(pid_t pid) {
  std::istringstream in(fileText("/proc/" + std::to_string(pid) + "/cgroup"));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return "";
}

void writeText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// The stand-in for a limits cgroup: PARENT/corral-<16 hex>, the name cgroup::create gives
// (or another name, for a decoy), under a parent of this test process's own (the sandbox's
// parent is whichever the host detection found; the root layout's MOUNT/corral is left alone).
// Removed at the end with whatever is left in it (thawed, cgroup.kill), as the guard would.
class StandIn {
 public:
  StandIn(const std::string& mount, const std::string& name)
      : parent_(mount + "/corral-test-" + std::to_string(::getpid())), rel_(parent_.substr(mount.size()) + "/" + name), dir_(mount + rel_) {
    ::mkdir(parent_.c_str(), 0755);
    made_ = ::mkdir(dir_.c_str(), 0755) == 0;
  }
  ~StandIn() {
    if (made_) {
      writeText(dir_ + "/cgroup.freeze", "0");
      writeText(dir_ + "/cgroup.kill", "1");
      (void)eventually([&] { return ::rmdir(dir_.c_str()) == 0 || errno == ENOENT; });
    }
    ::rmdir(parent_.c_str());  // fails while another stand-in of this test is in it
  }
  bool made() const { return made_; }
  const std::string& rel() const { return rel_; }  // as /proc/PID/cgroup says it
  const std::string& dir() const { return dir_; }

 private:
  std::string parent_, rel_, dir_;
  bool made_ = false;
};

// A busy "init" in cg: it joins it, forks a CPU burner and waits, so cg holds two processes.
Process busyInit(const std::string& cg) {
  return Process::start({"/bin/sh", "-c", "echo 0 > \"$0\"/cgroup.procs || exit 1; (while :; do :; done) & wait", cg});
}

std::string limitsName() { return "corral-" + randomHex16(); }

// What a daemon's Sessions does with its state directory: RECORDS/ID is the session's.
struct Records {
  TempDir dir{"freezer-records"};
  std::string id = randomHex16();
  Records() { ::mkdir((dir / id).c_str(), 0700); }
  std::string record() const { return dir / (id + "/freezer-cgroup"); }
};

TEST(DaemonPausedSessionStopped, RootV2LimitsCgroupFrozenInPlaceAndFoundAgainFromItsRecord) {
  CORRAL_REQUIRE_ROOT("the cgroup v2 hierarchy's root is root's on this host");
  const std::string mount = v2Mount();
  if (mount.empty()) GTEST_SKIP() << "no cgroup v2 hierarchy mounted on this host";
  StandIn cg(mount, limitsName());
  ASSERT_TRUE(cg.made()) << cg.dir();
  Process init = busyInit(cg.dir());
  ASSERT_TRUE(eventually([&] { return pidsIn(cg.dir()).size() == 2; })) << "the stand-in init and its burner never joined " << cg.dir();
  Records records;
  const daemon::Freezer f = daemon::findFreezer(daemon::FreezerChoice::kV2, records.dir.path());
  ASSERT_TRUE(f.usable && f.version == 2) << f.description;

  auto adopted = daemon::freezerAdopt(f, records.id, init.pid(), daemon::processStartTime(init.pid()));
  ASSERT_TRUE(adopted.ok()) << adopted.error().message();
  EXPECT_EQ(v2PathOf(init.pid()), cg.rel()) << claim("daemon.paused-session-stopped", "init was moved out of its limits cgroup");
  EXPECT_FALSE(fileExists(f.root + "/" + records.id)) << "a corral-sessions cgroup was made for an in-place session";
  EXPECT_EQ(fileText(records.record()), cg.rel() + "\n");
  const auto tasks = daemon::freezerTasks(f, records.id);
  EXPECT_EQ(tasks.size(), 2u);
  EXPECT_TRUE(contains(tasks, init.pid())) << "freezerTasks does not list the session's init";
  EXPECT_EQ(daemon::freezerState(f, records.id), "THAWED");
  // Control: running, the burner accrues CPU time.
  const uint64_t start = cpuUsec(cg.dir());
  ASSERT_TRUE(eventually([&] { return cpuUsec(cg.dir()) > start + 50'000; })) << "the burner never ran";

  auto paused = daemon::freezerSet(f, records.id, true);
  ASSERT_TRUE(paused.ok()) << paused.error().message();
  EXPECT_EQ(fileText(cg.dir() + "/cgroup.freeze"), "1\n");
  EXPECT_EQ(frozenLine(cg.dir()), "frozen 1");
  EXPECT_EQ(daemon::freezerState(f, records.id), "FROZEN");
  // Observed over a window (the measurement itself, not a synchronisation): no CPU at all.
  const uint64_t frozen = cpuUsec(cg.dir());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(cpuUsec(cg.dir()), frozen) << claim("daemon.paused-session-stopped", "a limits cgroup frozen in place used CPU");

  // A restart (or kill -9): a fresh freezer and the record alone find the cgroup again.
  const daemon::Freezer again = daemon::findFreezer(daemon::FreezerChoice::kV2, records.dir.path());
  EXPECT_EQ(daemon::freezerState(again, records.id), "FROZEN") << "the record was not read back";
  EXPECT_TRUE(contains(daemon::freezerTasks(again, records.id), init.pid()));
  auto resumed = daemon::freezerSet(again, records.id, false);
  ASSERT_TRUE(resumed.ok()) << resumed.error().message();
  EXPECT_EQ(frozenLine(cg.dir()), "frozen 0");
  EXPECT_EQ(daemon::freezerState(again, records.id), "THAWED");
  const uint64_t running = cpuUsec(cg.dir());
  EXPECT_TRUE(eventually([&] { return cpuUsec(cg.dir()) > running + 50'000; })) << "resume did not let it run again";

  // Remove thaws and forgets, also once the session's processes are gone (as after rm's
  // stop; a fatal signal reaches a v2-frozen task), when rmdir would succeed: the empty
  // directory stays its owner's.
  ASSERT_TRUE(daemon::freezerSet(again, records.id, true).ok());
  for (pid_t pid : daemon::freezerTasks(again, records.id)) ::kill(pid, SIGKILL);
  ASSERT_TRUE(eventually([&] { return pidsIn(cg.dir()).empty(); })) << "the frozen processes did not die";
  EXPECT_EQ(fileText(cg.dir() + "/cgroup.freeze"), "1\n");
  daemon::freezerRemove(again, records.id);
  EXPECT_EQ(fileText(cg.dir() + "/cgroup.freeze"), "0\n") << "remove did not thaw";
  EXPECT_TRUE(fileExists(cg.dir() + "/cgroup.procs")) << claim("daemon.paused-session-stopped", "remove took a cgroup it did not make");
  EXPECT_FALSE(fileExists(records.record())) << "the record outlived remove";
  EXPECT_EQ(daemon::freezerState(again, records.id), "");
}

TEST(DaemonPausedSessionStopped, RootV2LimitsCgroupRecordNamingAnotherCgroupIsRefused) {
  CORRAL_REQUIRE_ROOT("the cgroup v2 hierarchy's root is root's on this host");
  const std::string mount = v2Mount();
  if (mount.empty()) GTEST_SKIP() << "no cgroup v2 hierarchy mounted on this host";
  StandIn cg(mount, limitsName());
  StandIn decoy(mount, "decoy-" + randomHex16());  // a cgroup that is not a corral limits cgroup
  ASSERT_TRUE(cg.made() && decoy.made());
  Process init = busyInit(cg.dir());
  Process other = busyInit(decoy.dir());
  ASSERT_TRUE(eventually([&] { return pidsIn(cg.dir()).size() == 2 && pidsIn(decoy.dir()).size() == 2; }));
  Records records;
  const daemon::Freezer f = daemon::findFreezer(daemon::FreezerChoice::kV2, records.dir.path());
  ASSERT_TRUE(f.usable && f.version == 2) << f.description;

  // A pid whose start time is not init's (a reused pid) is not asked where it is.
  const uint64_t start = daemon::processStartTime(init.pid());
  EXPECT_FALSE(daemon::freezerAdopt(f, records.id, init.pid(), start + 1).ok()) << "adopted a pid of another start time";
  EXPECT_FALSE(fileExists(records.record()));
  EXPECT_EQ(v2PathOf(init.pid()), cg.rel());

  // Each names another cgroup, or this one by a path with "..": refused before any write.
  const std::string parent = cg.rel().substr(0, cg.rel().rfind('/'));
  for (const std::string& hostile : {decoy.rel(),                                       // not a limits cgroup's name
                                     cg.rel() + "/..",                                  // its parent
                                     cg.rel() + "/.." + cg.rel().substr(parent.size()),  // itself, through ".."
                                     "/../../../../tmp/" + limitsName(),               // off the hierarchy
                                     parent + "/" + limitsName(),                       // gone (or never there)
                                     cg.rel().substr(1),                                // relative
                                     cg.rel() + "\n" + decoy.rel()}) {                  // two lines
    writeText(records.record(), hostile + "\n");
    EXPECT_EQ(daemon::freezerState(f, records.id), "") << "record " << hostile;
    EXPECT_TRUE(daemon::freezerTasks(f, records.id).empty()) << "record " << hostile;
    EXPECT_FALSE(daemon::freezerSet(f, records.id, true).ok())
        << claim("daemon.paused-session-stopped", "a record naming another cgroup was frozen: " + hostile);
    EXPECT_EQ(fileText(decoy.dir() + "/cgroup.freeze"), "0\n") << "record " << hostile;
    EXPECT_EQ(fileText(cg.dir() + "/cgroup.freeze"), "0\n") << "record " << hostile;
  }
  // A record through a symlink is not followed.
  const std::string elsewhere = records.dir / "elsewhere";
  writeText(elsewhere, cg.rel() + "\n");
  ::unlink(records.record().c_str());
  ASSERT_EQ(::symlink(elsewhere.c_str(), records.record().c_str()), 0);
  EXPECT_EQ(daemon::freezerState(f, records.id), "") << "a symlinked record was followed";
  // Remove with a record naming the decoy: the decoy is neither thawed nor removed.
  writeText(decoy.dir() + "/cgroup.freeze", "1");
  ::unlink(records.record().c_str());
  writeText(records.record(), decoy.rel() + "\n");
  daemon::freezerRemove(f, records.id);
  EXPECT_EQ(fileText(decoy.dir() + "/cgroup.freeze"), "1\n") << "remove thawed a cgroup a record named";
  EXPECT_TRUE(fileExists(decoy.dir() + "/cgroup.procs"));
  writeText(decoy.dir() + "/cgroup.freeze", "0");
  // Control: the record of the real limits cgroup is taken (so the refusals above are not
  // those of a freezer that takes nothing).
  writeText(records.record(), cg.rel() + "\n");
  EXPECT_EQ(daemon::freezerState(f, records.id), "THAWED");
  EXPECT_TRUE(contains(daemon::freezerTasks(f, records.id), init.pid()));
}

// The daemon end to end, with no hook in it: a session made with --freezer v2 whose processes
// the test moves into a stand-in limits cgroup while the daemon is down, its row put back to
// "creating" (a launch cut short before the freezer). The restarted daemon finishes the
// create, finds init in a limits cgroup and freezes that in place from then on.
TEST(DaemonPausedSessionStopped, RootV2LimitsCgroupFrozenInPlaceThroughTheDaemon) {
  CORRAL_REQUIRE_ROOT("the cgroup v2 hierarchy's root is root's on this host");
  const std::string mount = v2Mount();
  if (mount.empty()) GTEST_SKIP() << "no cgroup v2 hierarchy mounted on this host";
  Daemon d({"--freezer", "v2"});
  const std::string id = startWithASession(d);
  ASSERT_FALSE(id.empty()) << d.stderrText();
  ASSERT_EQ(sessionExec(d, id, {"sh", "-c", "while :; do :; done >/dev/null 2>&1 &"}).exit_code, 0);
  d.kill9();
  const std::string sessions_cg = mount + "/corral-sessions/" + id;
  StandIn cg(mount, limitsName());
  ASSERT_TRUE(cg.made());
  for (pid_t pid : pidsIn(sessions_cg)) writeText(cg.dir() + "/cgroup.procs", std::to_string(pid));
  ASSERT_TRUE(pidsIn(sessions_cg).empty()) << "the session's processes did not all move";
  const std::string script =
      "import sqlite3, sys\n"
      "db = sqlite3.connect(sys.argv[1])\n"
      "db.execute(\"UPDATE sessions SET state='creating' WHERE id=?\", (sys.argv[2],))\n"
      "db.commit()\n"
      "print(db.execute('SELECT init_pid FROM sessions WHERE id=?', (sys.argv[2],)).fetchone()[0])\n";
  RunResult py = run({"/usr/bin/python3", "-c", script, d.stateDir() + "/state.db", id});
  ASSERT_EQ(py.exit_code, 0) << py.describe();
  const pid_t init = static_cast<pid_t>(std::stol(py.out));
  ASSERT_TRUE(contains(pidsIn(cg.dir()), init));

  ASSERT_TRUE(d.start()) << d.stderrText();
  auto shown = d.curl("GET", "/v1/sessions/" + id).json();
  EXPECT_EQ(shown["state"], "running") << shown.dump();
  EXPECT_EQ(shown["freezer"], "cgroup-v2") << shown.dump() << d.stderrText();
  EXPECT_EQ(v2PathOf(init), cg.rel()) << claim("daemon.paused-session-stopped", "init was moved out of its limits cgroup");
  EXPECT_FALSE(fileExists(sessions_cg)) << "the session's old corral-sessions cgroup stayed";
  const uint64_t start = cpuUsec(cg.dir());
  ASSERT_TRUE(eventually([&] { return cpuUsec(cg.dir()) > start + 50'000; })) << "the burner never ran";
  RunResult pause = d.cli({"session", "pause", id});
  ASSERT_EQ(pause.exit_code, 0) << pause.describe();
  EXPECT_EQ(frozenLine(cg.dir()), "frozen 1");
  const uint64_t frozen = cpuUsec(cg.dir());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(cpuUsec(cg.dir()), frozen) << claim("daemon.paused-session-stopped", "a session frozen in its limits cgroup used CPU");
  EXPECT_EQ(sessionExec(d, id, {"true"}).exit_code, 125) << "a command in a paused session";
  // kill -9 and restart: the state is read back through the record.
  d.kill9();
  ASSERT_TRUE(d.start()) << d.stderrText();
  EXPECT_EQ(d.curl("GET", "/v1/sessions/" + id).json()["state"], "paused");
  ASSERT_EQ(d.cli({"session", "resume", id}).exit_code, 0);
  EXPECT_EQ(frozenLine(cg.dir()), "frozen 0");
  const uint64_t resumed = cpuUsec(cg.dir());
  EXPECT_TRUE(eventually([&] { return cpuUsec(cg.dir()) > resumed + 50'000; })) << "resume did not let it run again";
  EXPECT_EQ(sessionExec(d, id, {"echo", "back"}).out, "back\n");
  // rm of a paused session thaws it (a frozen task cannot die), ends it, and leaves the
  // limits cgroup to its owner.
  ASSERT_EQ(d.cli({"session", "pause", id}).exit_code, 0);
  RunResult rm = d.cli({"session", "rm", id});
  ASSERT_EQ(rm.exit_code, 0) << rm.describe();
  EXPECT_TRUE(shimProcesses(d.stateDir()).empty());
  EXPECT_TRUE(eventually([&] { return pidsIn(cg.dir()).empty(); })) << "the session's processes outlived rm";
  EXPECT_TRUE(fileExists(cg.dir() + "/cgroup.procs")) << claim("daemon.paused-session-stopped", "rm removed a cgroup the daemon did not make");
  EXPECT_EQ(fileText(cg.dir() + "/cgroup.freeze"), "0\n");
}

}  // namespace
}  // namespace corral::testing
