// SPDX-License-Identifier: Apache-2.0
// Claims limits.memory, limits.pids, limits.cpu-time, limits.timeout: process-level budgets.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

namespace corral::testing {
namespace {

std::vector<std::string> pidsOpts(const std::string& n) { return {"--pids", n}; }

nlohmann::json limitOf(const RunResult& r, const char* name) {
  if (!r.report || !r.report->contains("limits") || !(*r.report)["limits"].contains(name)) return nullptr;
  return (*r.report)["limits"][name];
}

// --- limits.memory (cgroups need root on this host; rootless is limits.fail-closed) ---

TEST(LimitsMemory, RootBalloonIsKilledByTheMemoryLimit) {
  CORRAL_REQUIRE_ROOT("memory cgroups are only writable by root here");
  RunResult r = runProbe({"--memory", "64M", "--timeout", "60s"}, {"alloc", "512M"});
  EXPECT_FALSE(r.probe().ok()) << claim("limits.memory", "a 512M balloon fit under --memory 64M") << r.describe();
  EXPECT_EQ(r.reportStr("killed_by"), "memory") << claim("limits.memory", "report does not say memory") << r.describe();
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.describe();
  EXPECT_EQ(limitOf(r, "memory").value("value", 0ULL), 64ULL << 20) << r.describe();
  EXPECT_NE(limitOf(r, "memory").value("mechanism", "none"), "none") << r.describe();
  EXPECT_LE(r.reportInt("peak_memory_bytes"), 64LL << 20) << claim("limits.memory", "peak above the cap") << r.describe();
}

// Rootless there is no memory cgroup; the opted-in weaker mechanism (RLIMIT_AS) must still
// stop the balloon, by failing its allocation.
TEST(LimitsMemory, WeakerMechanismStillStopsABalloonRootless) {
  if (!isRoot() && getuid() != kNobody) GTEST_SKIP() << "runs as root or nobody only";
  RunOptions o;
  if (isRoot()) o.as_user = kNobody;
  RunResult r = run(probeArgv({"--memory", "64M", "--allow-weaker", "memory"}, {"alloc", "512M"}), o);
  EXPECT_TRUE(probeRefused(r, {"ENOMEM"})) << claim("limits.memory", "a 512M balloon fit under --memory 64M (weaker)");
  EXPECT_EQ(limitOf(r, "memory").value("mechanism", ""), "rlimit-as") << r.describe();
}

TEST(LimitsMemory, RootControlSmallAllocationFits) {
  CORRAL_REQUIRE_ROOT("memory cgroups are only writable by root here");
  RunResult r = runProbe({"--memory", "256M"}, {"alloc", "32M"});
  EXPECT_TRUE(probeDid(r));
  EXPECT_EQ(r.reportStr("killed_by"), "none") << r.describe();
}

// --- limits.pids ---

TEST(LimitsPids, ForkBombIsHeld) {
  RunResult r = runProbe(pidsOpts("32"), {"fork-bomb", "1000"});
  EXPECT_TRUE(probeRefused(r, {"EAGAIN"})) << claim("limits.pids", "a fork bomb was not stopped under --pids 32");
  EXPECT_LT(r.probe().num("count"), 32) << claim("limits.pids", "more processes than --pids 32") << r.describe();
  EXPECT_EQ(limitOf(r, "pids").value("value", 0), 32) << r.describe();
}

TEST(LimitsPids, DefaultCapIs4096) {
  RunResult r = runProbe({}, {"exit", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(limitOf(r, "pids").value("value", 0), 4096) << claim("limits.pids", "default pids cap is not 4096") << r.describe();
  EXPECT_NE(limitOf(r, "pids").value("mechanism", "none"), "none") << claim("limits.pids", "no mechanism holds the default cap") << r.describe();
}

TEST(LimitsPids, ControlForkWorksUnderAGenerousCap) {
  RunResult r = runProbe(pidsOpts("256"), {"fork-bomb", "50"});
  EXPECT_TRUE(probeDid(r));
  EXPECT_EQ(r.probe().num("count"), 50);
}

// --- limits.cpu-time ---

TEST(LimitsCpuTime, SpinningPastTheBudgetIsKilled) {
  RunResult r = runProbe({"--cpu-time", "1s", "--timeout", "30s"}, {"spin"});
  EXPECT_EQ(r.reportStr("killed_by"), "cpu-time") << claim("limits.cpu-time", "spin not killed for CPU time") << r.describe();
  EXPECT_TRUE(r.exit_code == 128 + SIGXCPU || r.exit_code == 128 + SIGKILL) << r.describe();
  EXPECT_GE(r.reportInt("cpu_user_ms") + r.reportInt("cpu_sys_ms"), 900) << r.describe();
}

TEST(LimitsCpuTime, ControlShortBurnFinishes) {
  RunResult r = runProbe({"--cpu-time", "5s"}, {"spin", "100"});
  EXPECT_TRUE(probeDid(r));
  EXPECT_EQ(r.reportStr("killed_by"), "none") << r.describe();
}

// --- limits.timeout ---

TEST(LimitsTimeout, DeadlineKillsTheWholeSandboxWith124) {
  RunResult r = runProbe({"--timeout", "200ms"}, {"sleep-forever-tree", uniqueName("deadline")});
  EXPECT_EQ(r.exit_code, 124) << claim("limits.timeout", "exit status is not 124") << r.describe();
  EXPECT_EQ(r.reportStr("killed_by"), "timeout") << r.describe();
  EXPECT_GE(r.reportInt("wall_ms"), 200) << r.describe();
  EXPECT_LT(r.reportInt("wall_ms"), 5000) << claim("limits.timeout", "the kill came long after the deadline") << r.describe();
  EXPECT_FALSE(r.deadline_hit) << claim("limits.timeout", "corral never returned");
}

// stdout/stderr the sandbox must not get directly (a FIFO, a file, a terminal; rootless every
// pipe) are relayed by corral. A caller who stops reading one of them (a harness that reads
// stdout to its end before it reads stderr) used to block corral inside the relay, where the
// deadline, the caller's signals and init's exit are served: the command ran on unbounded.
// Here stderr is a FIFO whose reader never reads, and the command writes 200 KB to it.
TEST(LimitsTimeout, ACallerWhoStopsReadingStderrDoesNotHoldOffTheDeadline) {
  TempDir dir("timeout-fifo");
  const std::string fifo = dir / "err";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // held, never read
  ASSERT_GE(reader, 0);
  std::string script = "exec";
  for (const std::string& a : corralArgv({"--timeout", "1s"}, {"/bin/sh", "-c", "head -c 200000 /dev/zero >&2; sleep 1000"}, false))
    script += " '" + a + "'";
  script += " 2>'" + fifo + "'";
  RunResult r = run({"/bin/sh", "-c", script}, RunOptions{.deadline = std::chrono::milliseconds(20'000)});
  ::close(reader);
  EXPECT_FALSE(r.deadline_hit) << claim("limits.timeout", "corral was still running 19 s after a 1 s deadline")
                               << r.describe();
  EXPECT_EQ(r.exit_code, 124) << r.describe();
}

// Control for the test above: the same command, the FIFO read, and it ends at its deadline too.
TEST(LimitsTimeout, ControlWithStderrReadTheSameRunEndsAtItsDeadline) {
  RunResult r = run(corralArgv({"--timeout", "1s"}, {"/bin/sh", "-c", "head -c 200000 /dev/zero >&2; sleep 1000"}, false),
                    RunOptions{.deadline = std::chrono::milliseconds(20'000)});
  EXPECT_FALSE(r.deadline_hit) << r.describe();
  EXPECT_EQ(r.exit_code, 124) << r.describe();
  EXPECT_EQ(r.err.size(), 200000u) << "stderr is delivered whole";
}

TEST(LimitsTimeout, ControlFastCommandIsUntouched) {
  RunResult r = runProbe({"--timeout", "10s"}, {"exit", "7"});
  EXPECT_EQ(r.exit_code, 7) << r.describe();
  EXPECT_EQ(r.reportStr("killed_by"), "none") << r.describe();
}

}  // namespace
}  // namespace corral::testing
