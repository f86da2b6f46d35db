// SPDX-License-Identifier: Apache-2.0
// Claims limits.memory, limits.pids, limits.cpu-time, limits.timeout: process-level budgets.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

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

// The sandbox leaves corral's process group (so a terminal's signals reach the command once,
// through corral). A Ctrl-Z (SIGTSTP to corral) then stopped corral alone: the command ran on
// unsupervised, past its deadline, until the user ran `fg`. Now the whole sandbox stops with
// corral, and the deadline is enforced once it is continued.
char procState(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), {});
  const size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

std::vector<pid_t> childrenOf(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::vector<pid_t> out;
  for (pid_t c; f >> c;) out.push_back(c);
  return out;
}

bool reachesState(pid_t pid, char state, std::chrono::milliseconds within) {
  const auto end = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < end) {
    if (procState(pid) == state) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return procState(pid) == state;
}

TEST(LimitsTimeout, ACtrlZStopsTheWholeSandboxAndTheDeadlineHoldsOnceContinued) {
  Process corral = Process::start(
      corralArgv({"--timeout", "2s"}, {"/bin/sh", "-c", "echo ready; while :; do sleep 0.05; done"}, false));
  auto ready = corral.readLine(std::chrono::seconds(30));
  ASSERT_TRUE(ready && *ready == "ready") << corral.wait().describe();
  std::vector<pid_t> init = childrenOf(corral.pid());
  ASSERT_EQ(init.size(), 1u) << "control: corral's one child is the sandbox's init";
  std::vector<pid_t> command = childrenOf(init[0]);
  ASSERT_EQ(command.size(), 1u) << "control: init's one child is the command";
  corral.signal(SIGTSTP);
  ASSERT_TRUE(reachesState(corral.pid(), 'T', std::chrono::seconds(10))) << "corral itself did not stop";
  // Stopped: 'T', or 'D' for a shell waiting in vfork() on a child stopped before its exec.
  EXPECT_TRUE(reachesState(command[0], 'T', std::chrono::seconds(10)) || procState(command[0]) == 'D')
      << claim("limits.timeout", "corral was stopped and the command ran on unsupervised") << procState(command[0]);
  corral.signal(SIGCONT);
  EXPECT_TRUE(corral.exitedWithin(std::chrono::seconds(10))) << claim("limits.timeout", "no deadline after SIGCONT");
  RunResult r = corral.wait();
  EXPECT_EQ(r.exit_code, 124) << r.describe();
}

// The same through the terminal: corral started in the background of a job-control session
// (`corral exec ... &`) with the terminal as stdin reads it once input waits there. That stopped corral
// by SIGTTIN and leave the sandbox running; now the job stops whole, and runs to its deadline
// once brought to the foreground.
// Drives `corral ... &` in a job-control session on a pseudo-terminal whose input waits for
// it: prints whether corral stopped, the state of the sandbox's processes, then the exit status
// once corral is brought to the foreground and continued.
const char kBackgroundJobDriver[] = R"PY(
import fcntl, os, pty, signal, sys, termios, time
corral = sys.argv[1:]
m, s = pty.openpty()
leader = os.fork()
if leader == 0:
    os.setsid()
    fcntl.ioctl(s, termios.TIOCSCTTY, 0)
    c = os.fork()
    if c == 0:
        os.setpgid(0, 0)
        for fd in (0, 1, 2):
            os.dup2(s, fd)
        os.execv(corral[0], corral)
    try:
        os.setpgid(c, c)
    except OSError:
        pass
    _, st = os.waitpid(c, os.WUNTRACED)
    print("corral", "stopped" if os.WIFSTOPPED(st) else "ended", flush=True)
    def kids(p):
        try:
            return [int(x) for x in open("/proc/%d/task/%d/children" % (p, p)).read().split()]
        except OSError:
            return []
    def state(p):
        return open("/proc/%d/stat" % p).read().rsplit(")", 1)[1].split()[0]
    def tree(p):
        out = []
        for k in kids(p):
            out += [k] + tree(k)
        return out
    # Every process of the sandbox (init's descendants) stopped: 'T', or 'D' for a shell
    # waiting in vfork() on a child that was stopped before its exec.
    st_cmd = "none"
    for _ in range(500):
        states = []
        for k in [k for i in kids(c) for k in tree(i)]:
            try:
                states.append(state(k))
            except OSError:
                continue
        st_cmd = "T" if states and all(x in "TD" for x in states) else "".join(states) or "none"
        if st_cmd == "T":
            break
        time.sleep(0.02)
    print("command", st_cmd, flush=True)
    os.tcsetpgrp(s, c)
    os.killpg(c, signal.SIGCONT)
    _, st = os.waitpid(c, 0)
    print("then", os.waitstatus_to_exitcode(st), flush=True)
    os._exit(0)
os.close(s)
os.write(m, b"typed ahead\n")  # input waiting on the terminal: the background job reads it
while True:
    try:
        if not os.read(m, 4096):
            break
    except OSError:
        break
os.waitpid(leader, 0)
)PY";

RunResult runBackgroundJob(const std::vector<std::string>& prefix = {}) {
  std::vector<std::string> argv = prefix;
  for (const std::string& a : {std::string("/usr/bin/python3"), std::string("-c"), std::string(kBackgroundJobDriver)}) argv.push_back(a);
  for (const std::string& a : corralArgv({"--timeout", "2s"}, {"/bin/sh", "-c", "sleep 30"}, false)) argv.push_back(a);
  return run(argv, RunOptions{.deadline = std::chrono::milliseconds(40'000)});
}

TEST(LimitsTimeout, ABackgroundJobReadingTheTerminalStopsWholeAndTheDeadlineHoldsInTheForeground) {
  RunResult r = runBackgroundJob();
  EXPECT_EQ(r.out, "corral stopped\ncommand T\nthen 124\n")
      << claim("limits.timeout", "a background corral stopped by the terminal left its command running") << r.describe();
}

// The same when init starts late: corral reads the terminal, forwards SIGTTIN and stops itself
// before init has run at all (one CPU, busy). Init used to drop every signal pending at its
// start as a stray copy of one sent to corral's group, this one too, and the sandbox ran on.
TEST(LimitsTimeout, ABackgroundJobStopsWholeEvenWhenInitStartsLate) {
  if (::access("/usr/bin/taskset", X_OK) != 0) GTEST_SKIP() << "taskset not installed";
  std::vector<pid_t> spinners;  // one busy loop on the CPU corral and init share
  for (int i = 0; i < 1; ++i) {
    pid_t p = ::fork();
    if (p == 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(0, &one);
      ::sched_setaffinity(0, sizeof one, &one);
      for (;;) {
      }
    }
    spinners.push_back(p);
  }
  int stopped_whole = 0;
  constexpr int kRounds = 5;
  for (int i = 0; i < kRounds; ++i)
    if (runBackgroundJob({"/usr/bin/taskset", "-c", "0"}).out == "corral stopped\ncommand T\nthen 124\n") ++stopped_whole;
  for (pid_t p : spinners) {
    ::kill(p, SIGKILL);
    ::waitpid(p, nullptr, 0);
  }
  EXPECT_EQ(stopped_whole, kRounds) << claim("limits.timeout", "a SIGTTIN forwarded before init ran was dropped");
}

// The stop goes to one process at a time: a process not stopped yet could SIGCONT one that
// was (8 processes doing nothing else escaped within a few tries). Init repeats the stop until
// it sees every process stopped; a stopped process sends nothing.
std::vector<pid_t> descendantsOf(pid_t pid) {
  std::vector<pid_t> out;
  for (pid_t c : childrenOf(pid)) {
    out.push_back(c);
    for (pid_t d : descendantsOf(c)) out.push_back(d);
  }
  return out;
}

TEST(LimitsTimeout, ProcessesThatContinueEachOtherCannotEscapeAJobStop) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    Process corral = Process::start(probeArgv({"--timeout", "1s"}, {"cont-storm", "8"}));
    auto ready = corral.readLine(std::chrono::seconds(30));
    ASSERT_TRUE(ready && *ready == "ready") << corral.wait().describe();
    corral.signal(SIGTSTP);
    ASSERT_TRUE(reachesState(corral.pid(), 'T', std::chrono::seconds(10))) << "corral itself did not stop";
    std::vector<pid_t> init = childrenOf(corral.pid());
    ASSERT_EQ(init.size(), 1u);
    auto running = [&init] {
      std::string out;
      for (pid_t p : descendantsOf(init[0]))
        if (std::string("TtDZX?").find(procState(p)) == std::string::npos) out += std::to_string(p) + ":" + procState(p) + " ";
      return out;
    };
    // Init stops them beside corral, which stops at once: give it time (a loaded host), then
    // every process must stay stopped.
    std::string now = running();
    for (int i = 0; i < 500 && !now.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      now = running();
    }
    for (int sample = 0; sample < 10 && now.empty(); ++sample) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      now = running();
    }
    EXPECT_TRUE(now.empty()) << claim("limits.timeout", "processes of the sandbox run on while corral is stopped: ") << now;
    const std::string& running_at_end = now;
    corral.signal(SIGCONT);
    EXPECT_TRUE(corral.exitedWithin(std::chrono::seconds(10)));
    EXPECT_EQ(corral.wait().exit_code, 124);
    if (!running_at_end.empty()) break;
  }
}

// A SIGCONT that corral did not follow a stop of its own with is the command's, forwarded to
// its process group as before: it does not continue a process the command stopped itself.
TEST(ExecSignals, ASigcontToCorralDoesNotContinueWhatTheCommandStopped) {
  Process corral = Process::start(corralArgv(
      {"--timeout", "2s"}, {"/bin/sh", "-c", "setsid sleep 100 & p=$!; sleep 0.3; kill -STOP $p; echo ready; wait"}, false));
  auto ready = corral.readLine(std::chrono::seconds(30));
  ASSERT_TRUE(ready && *ready == "ready") << corral.wait().describe();
  std::vector<pid_t> init = childrenOf(corral.pid());
  ASSERT_EQ(init.size(), 1u);
  pid_t sleeper = -1;
  for (pid_t p : descendantsOf(init[0]))
    if (reachesState(p, 'T', std::chrono::milliseconds(200))) sleeper = p;
  ASSERT_GT(sleeper, 0) << "control: the command stopped its sleep";
  corral.signal(SIGCONT);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(procState(sleeper), 'T') << "a stray SIGCONT to corral continued a process the command had stopped";
  EXPECT_EQ(corral.wait().exit_code, 124);
}

TEST(LimitsTimeout, ControlFastCommandIsUntouched) {
  RunResult r = runProbe({"--timeout", "10s"}, {"exit", "7"});
  EXPECT_EQ(r.exit_code, 7) << r.describe();
  EXPECT_EQ(r.reportStr("killed_by"), "none") << r.describe();
}

}  // namespace
}  // namespace corral::testing
