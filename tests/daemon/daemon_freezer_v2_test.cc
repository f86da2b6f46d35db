// SPDX-License-Identifier: Apache-2.0
// pause/resume with cgroup v2's core freezer (`corral daemon --freezer v2`): cgroup.freeze,
// and "frozen 1" in cgroup.events; a paused session's busy loop gets no CPU until resumed.
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

// The cgroup2 hierarchy's mount point, "" when none is mounted.
std::string v2Mount() {
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream fields(line);
    std::string f, point;
    for (int i = 0; i < 5 && fields >> f; ++i) point = f;
    return point;
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

// ---- daemon.paused-session-stopped (cgroup v2) ----

TEST(DaemonPausedSessionStopped, RootV2CgroupFreezeStopsASessionUntilResumed) {
  CORRAL_REQUIRE_ROOT("the cgroup v2 hierarchy's root is root's on this host");
  const std::string mount = v2Mount();
  if (mount.empty() || !fileExists(mount + "/cgroup.procs")) GTEST_SKIP() << "no cgroup v2 hierarchy mounted on this host";
  Daemon d({"--freezer", "v2"});
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
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

}  // namespace
}  // namespace corral::testing
