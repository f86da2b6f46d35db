// SPDX-License-Identifier: Apache-2.0
// pause/resume (the cgroup freezer) and --ttl: a paused session really stops, an expired one
// is gone, also when it expired while no daemon ran.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <sstream>

#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

const std::string kFreezer = "/sys/fs/cgroup/freezer/corral-sessions/";

// utime + stime (clock ticks) of every process in the session's freezer cgroup.
uint64_t sessionCpuTicks(const std::string& id) {
  std::istringstream procs(fileText(kFreezer + id + "/cgroup.procs"));
  uint64_t total = 0;
  for (long pid; procs >> pid;) {
    const std::string stat = fileText("/proc/" + std::to_string(pid) + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 2));
    std::string f;
    uint64_t utime = 0, stime = 0;
    for (int i = 3; i <= 15 && fields >> f; ++i) {
      if (i == 14) utime = std::strtoull(f.c_str(), nullptr, 10);
      if (i == 15) stime = std::strtoull(f.c_str(), nullptr, 10);
    }
    total += utime + stime;
  }
  return total;
}

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// ---- daemon.paused-session-stopped ----

TEST(DaemonPausedSessionStopped, RootAPausedSessionUsesNoCpuUntilResumed) {
  CORRAL_REQUIRE_ROOT("the cgroup v1 freezer is root's on this host");
  if (!fileExists("/sys/fs/cgroup/freezer/cgroup.procs")) GTEST_SKIP() << "no cgroup v1 freezer mounted on this host";
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(sessionExec(d, id, {"sh", "-c", "while :; do :; done >/dev/null 2>&1 &"}).exit_code, 0);
  // Control: running, the burner accrues CPU time.
  const uint64_t start = sessionCpuTicks(id);
  ASSERT_TRUE(eventually([&] { return sessionCpuTicks(id) > start + 5; })) << "the burner never ran";
  RunResult pause = d.cli({"session", "pause", id});
  ASSERT_EQ(pause.exit_code, 0) << pause.describe();
  EXPECT_EQ(fileText(kFreezer + id + "/freezer.state"), "FROZEN\n");
  EXPECT_EQ(d.curl("GET", "/v1/sessions/" + id).json()["state"], "paused");
  // Observed over a window (the measurement itself, not a synchronisation): no tick at all.
  const uint64_t frozen = sessionCpuTicks(id);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(sessionCpuTicks(id), frozen) << claim("daemon.paused-session-stopped", "a paused session used CPU");
  RunResult refused = sessionExec(d, id, {"true"});
  EXPECT_EQ(refused.exit_code, 125) << "a command in a paused session: " << refused.describe();
  // Paused survives a daemon restart.
  d.kill9();
  ASSERT_TRUE(d.start()) << d.stderrText();
  EXPECT_EQ(d.curl("GET", "/v1/sessions/" + id).json()["state"], "paused");
  ASSERT_EQ(d.cli({"session", "resume", id}).exit_code, 0);
  const uint64_t resumed = sessionCpuTicks(id);
  EXPECT_TRUE(eventually([&] { return sessionCpuTicks(id) > resumed + 5; })) << "resume did not let it run again";
  EXPECT_EQ(sessionExec(d, id, {"echo", "back"}).out, "back\n");
  // rm of a paused session leaves no cgroup behind.
  ASSERT_EQ(d.cli({"session", "pause", id}).exit_code, 0);
  ASSERT_EQ(d.cli({"session", "rm", id}).exit_code, 0);
  EXPECT_FALSE(fileExists(kFreezer + id)) << "the freezer cgroup outlived rm";
  EXPECT_TRUE(shimProcesses(d.stateDir()).empty());
}

TEST(DaemonPausedSessionStopped, WithoutAFreezerPauseIsRefusedAndChangesNothing) {
  if (::geteuid() == 0) GTEST_SKIP() << "a root daemon has the freezer here (the rootless pass runs this)";
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  RunResult pause = d.cli({"session", "pause", id});
  EXPECT_EQ(pause.exit_code, 125) << pause.describe();
  EXPECT_NE(pause.err.find("freezer"), std::string::npos) << "the refusal must say why: " << pause.err;
  EXPECT_EQ(d.curl("GET", "/v1/sessions/" + id).json()["state"], "running");
  EXPECT_EQ(sessionExec(d, id, {"echo", "still"}).out, "still\n");
  RunResult doctor = run({corralBin(), "doctor", "--json"});
  EXPECT_NE(doctor.out.find("session-pause"), std::string::npos) << doctor.out;
}

// ---- daemon.ttl-ends-session ----

TEST(DaemonTtlEndsSession, AnExpiredSessionIsRemovedAndLeavesNothing) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string keep = d.createSession();
  const std::string id = d.createSession({"--ttl", "3s"});
  ASSERT_FALSE(id.empty());
  ASSERT_FALSE(keep.empty());
  auto show = d.curl("GET", "/v1/sessions/" + id).json();
  ASSERT_TRUE(show.contains("expires_at_ms")) << show.dump();
  ASSERT_EQ(sessionExec(d, id, {"sh", "-c", "sleep 1000 >/dev/null 2>&1 &"}).exit_code, 0);
  EXPECT_TRUE(eventually([&] { return d.curl("GET", "/v1/sessions/" + id).status == 404; }))
      << claim("daemon.ttl-ends-session", "the session outlived its ttl");
  EXPECT_GE(nowMs(), show["expires_at_ms"].get<int64_t>()) << "removed before it expired";
  EXPECT_FALSE(fileExists(d.stateDir() + "/sessions/" + id)) << claim("daemon.ttl-ends-session", "its directory was left");
  EXPECT_EQ(shimProcesses(d.stateDir()).size(), 1u) << claim("daemon.ttl-ends-session", "its shim was left");
  // Control: the session without a ttl is untouched.
  EXPECT_EQ(sessionExec(d, keep, {"echo", "alive"}).out, "alive\n");
}

TEST(DaemonTtlEndsSession, ExpiryWhileTheDaemonWasDownIsHonouredAtStart) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession({"--ttl", "2s"});
  ASSERT_FALSE(id.empty());
  const int64_t expires = d.curl("GET", "/v1/sessions/" + id).json()["expires_at_ms"].get<int64_t>();
  d.kill9();
  ASSERT_EQ(shimProcesses(d.stateDir()).size(), 1u) << "control: the session outlives the daemon";
  ASSERT_TRUE(eventually([&] { return nowMs() > expires; }));
  ASSERT_TRUE(d.start()) << d.stderrText();
  EXPECT_TRUE(eventually([&] { return shimProcesses(d.stateDir()).empty(); }))
      << claim("daemon.ttl-ends-session", "a session that expired while no daemon ran was kept");
  EXPECT_TRUE(eventually([&] { return d.curl("GET", "/v1/sessions/" + id).status == 404; }));
  EXPECT_TRUE(mountsUnder(d.stateDir()).empty());
}

}  // namespace
}  // namespace corral::testing
