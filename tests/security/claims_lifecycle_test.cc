// SPDX-License-Identifier: Apache-2.0
// Claims pidns.no-survivors and init.not-inspectable: the sandbox's process lifecycle.
#include <signal.h>

#include <cstring>

#include "harness.h"

namespace corral::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string pidList(const std::vector<pid_t>& pids) {
  std::string s;
  for (pid_t p : pids) s += (s.empty() ? "" : ",") + std::to_string(p);
  return s;
}

// --- pidns.no-survivors ---

TEST(PidnsNoSurvivors, DaemonsDieWhenTheCommandExits) {
  std::string marker = uniqueName("exit-marker");
  // --timeout is only a backstop: corral waiting for the daemons would show up as 124.
  RunResult r = runProbe({"--timeout", "10s"}, {"daemonize", marker});
  ASSERT_TRUE(r.probe().word("ready")) << "the tree was never built" << r.describe();
  EXPECT_EQ(r.exit_code, 0) << claim("pidns.no-survivors", "corral did not end with the command") << r.describe();
  auto left = waitForNoMarker(marker, seconds(3));
  EXPECT_TRUE(left.empty()) << claim("pidns.no-survivors", "daemons outlived the command: pids " + pidList(left));
}

// A background tree that keeps the caller's stderr open must not keep corral (or itself) alive.
TEST(PidnsNoSurvivors, BackgroundTreeHoldingStderrDiesWithTheCommand) {
  std::string marker = uniqueName("bg-marker");
  std::string script = std::string(kProbe) + " sleep-forever-tree " + marker +
                       " > ready & while [ ! -s ready ]; do :; done; cat ready";
  RunResult r = runCorral(probeBind(), {"/bin/sh", "-c", script}, RunOptions{.deadline = seconds(20)});
  ASSERT_TRUE(r.probe().word("ready")) << "the tree was never built" << r.describe();
  EXPECT_EQ(r.exit_code, 0) << claim("pidns.no-survivors", "corral did not end with the command") << r.describe();
  auto left = waitForNoMarker(marker, seconds(3));
  EXPECT_TRUE(left.empty()) << claim("pidns.no-survivors", "background tree outlived the command: pids " + pidList(left));
}

TEST(PidnsNoSurvivors, TimeoutKillsADaemonisedTree) {
  std::string marker = uniqueName("timeout-marker");
  RunResult r = runProbe({"--timeout", "300ms"}, {"sleep-forever-tree", marker});
  ASSERT_TRUE(r.probe().word("ready")) << "the tree was never built" << r.describe();
  EXPECT_EQ(r.exit_code, 124) << r.describe();
  auto left = waitForNoMarker(marker, seconds(3));
  EXPECT_TRUE(left.empty()) << claim("pidns.no-survivors", "tree survived the timeout: pids " + pidList(left));
}

// corral itself killed from outside: nothing it started may stay behind.
TEST(PidnsNoSurvivors, KillingCorralLeavesNoSandboxProcess) {
  for (int sig : {SIGKILL, SIGTERM, SIGINT, SIGHUP}) {
    SCOPED_TRACE(strsignal(sig));
    std::string marker = uniqueName("kill-marker");
    Process corral = Process::start(probeArgv({"--timeout", "60s"}, {"sleep-forever-tree", marker}));
    auto ready = corral.readLine(seconds(30));
    ASSERT_TRUE(ready && parseProbeLine(*ready).word("ready")) << "tree never built" << corral.wait().describe();
    auto running = probeProcessesWithMarker(marker);
    ASSERT_GE(running.size(), 3u) << "control: the host scan must see the tree (top, daemon, worker)";
    corral.signal(sig);
    // corral may forward a polite signal to the command instead of dying; the tree ignores
    // it, so corral then still runs and is finally killed outright.
    if (!corral.exitedWithin(seconds(1))) corral.signal(SIGKILL);
    RunResult r = corral.wait();
    auto left = waitForNoMarker(marker, seconds(5));
    EXPECT_TRUE(left.empty()) << claim("pidns.no-survivors", std::string("after ") + strsignal(sig) +
                                                                " to corral, pids " + pidList(left) + " survive")
                              << r.describe();
    for (pid_t p : left) kill(p, SIGKILL);  // do not leak into the next case
  }
}

TEST(PidnsNoSurvivors, OrphanZombiesAreReaped) {
  RunResult r = runProbe({}, {"orphan-zombie"});
  EXPECT_TRUE(probeDid(r)) << claim("pidns.no-survivors", "a zombie orphan was left unreaped inside");
}

TEST(PidnsNoSurvivors, ControlZombieDetectorSeesAnUnreapedOrphan) {
  RunResult r = runHostProbe({"orphan-zombie", "noreap"});
  EXPECT_TRUE(probeRefused(r)) << "the probe does not notice a zombie it keeps on purpose";
  EXPECT_TRUE(r.probe().has("zombies")) << r.describe();
}

// --- init.not-inspectable ---

TEST(InitNotInspectable, InitCannotBePtraced) {
  RunResult r = runProbe({}, {"ptrace-attach", "1"});
  EXPECT_TRUE(probeRefused(r)) << claim("init.not-inspectable", "ptrace attached to pid 1");
}

TEST(InitNotInspectable, InitProcFilesAreUnreadable) {
  const std::vector<std::vector<std::string>> kOps{
      {"read", "/proc/1/environ"}, {"read", "/proc/1/mem"},   {"listdir", "/proc/1/fd"},
      {"listdir", "/proc/1/root"}, {"listdir", "/proc/1/cwd"}, {"readlink", "/proc/1/exe"},
      {"listdir", "/proc/1/map_files"}, {"fd-escape", "1"}, {"listdir", "/proc/1/task/1/fd"},
      {"read", "/proc/1/task/1/environ"}, {"pidfd-getfd", "1"}, {"listdir", "/proc/1/fdinfo"},
      {"read", "/proc/1/maps"}, {"read", "/proc/1/auxv"}};
  for (const auto& op : kOps) {
    RunResult r = runProbe({}, op);
    EXPECT_TRUE(probeRefused(r)) << claim("init.not-inspectable", op[0] + " " + op[1] + " worked on init");
  }
}

// A non-dumpable process's /proc files belong to root of its user namespace, not to its uid.
TEST(InitNotInspectable, InitIsNonDumpable) {
  RunResult init = runProbe({}, {"stat", "/proc/1/environ"});
  RunResult self = runProbe({}, {"stat", "/proc/self/environ"});
  ASSERT_TRUE(probeDid(init));
  ASSERT_TRUE(probeDid(self));
  EXPECT_EQ(self.probe().num("uid"), 1000) << "control: a dumpable process owns its /proc files" << self.describe();
  EXPECT_NE(init.probe().num("uid"), 1000) << claim("init.not-inspectable", "init is dumpable") << init.describe();
}

TEST(InitNotInspectable, ControlPtraceAndFdStealWorkOnAnOrdinaryHostProcess) {
  RunOptions o;
  o.stdin_pipe = true;
  Process target = Process::start({probeHostPath(), "await", uniqueName("ptrace-target")}, o);
  ASSERT_TRUE(target.readLine(seconds(10))) << "target never became ready";
  EXPECT_TRUE(probeDid(runHostProbe({"ptrace-attach", std::to_string(target.pid())})))
      << "the probe cannot ptrace even an ordinary same-user process";
  EXPECT_TRUE(probeDid(runHostProbe({"pidfd-getfd", std::to_string(target.pid())})))
      << "the probe cannot steal fds even from an ordinary same-user process";
  target.closeStdin();
  target.wait();
}

TEST(InitNotInspectable, ControlOrdinarySiblingIsInspectable) {
  EXPECT_TRUE(probeDid(runProbe({}, {"inspect-sibling"})))
      << "the probe cannot read /proc of an ordinary sandbox process either, so the test above proves nothing";
}

}  // namespace
}  // namespace corral::testing
