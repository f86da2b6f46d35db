// SPDX-License-Identifier: Apache-2.0
// End-to-end: exit-status and signal propagation, and the --json / --report report.
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "harness.h"

namespace corral::testing {
namespace {

struct StatusCase {
  const char* name;
  std::vector<std::string> command;
  int exit_code;
  int command_status;  // -1: null
  int signal;          // -1: null
  const char* killed_by;
};

void PrintTo(const StatusCase& c, std::ostream* os) { *os << c.name; }

class ExecStatus : public ::testing::TestWithParam<StatusCase> {};

TEST_P(ExecStatus, PropagatesTheCommandsStatus) {
  const StatusCase& c = GetParam();
  RunResult r = runCorral({}, c.command);
  EXPECT_EQ(r.exit_code, c.exit_code) << r.describe();
  EXPECT_EQ(r.reportInt("exit_code"), c.exit_code) << r.describe();
  EXPECT_EQ(r.reportInt("command_status"), c.command_status) << r.describe();
  EXPECT_EQ(r.reportInt("signal"), c.signal) << r.describe();
  EXPECT_EQ(r.reportStr("killed_by"), c.killed_by) << r.describe();
}

INSTANTIATE_TEST_SUITE_P(
    , ExecStatus,
    ::testing::Values(StatusCase{"true", {"true"}, 0, 0, -1, "none"}, StatusCase{"false", {"false"}, 1, 1, -1, "none"},
                      StatusCase{"exit3", {"sh", "-c", "exit 3"}, 3, 3, -1, "none"},
                      StatusCase{"exit255", {"sh", "-c", "exit 255"}, 255, 255, -1, "none"},
                      StatusCase{"sigterm", {"sh", "-c", "kill -TERM $$"}, 128 + SIGTERM, -1, SIGTERM, "signal"},
                      StatusCase{"sigkill", {"sh", "-c", "kill -KILL $$"}, 128 + SIGKILL, -1, SIGKILL, "signal"},
                      StatusCase{"sigsegv", {"sh", "-c", "kill -SEGV $$"}, 128 + SIGSEGV, -1, SIGSEGV, "signal"},
                      StatusCase{"not_found", {"/no/such/command"}, 127, 127, -1, "none"}),
    [](const auto& info) { return std::string(info.param.name); });

// --- the report ---

TEST(ExecReport, JsonReportHasEveryContractKey) {
  RunResult r = runCorral({}, {"sh", "-c", "echo out; exit 4"});
  ASSERT_TRUE(r.report) << "no JSON object on the last stderr line" << r.describe();
  const auto& j = *r.report;
  for (const char* key : {"version", "exit_code", "command_status", "signal", "killed_by", "wall_ms", "cpu_user_ms",
                          "cpu_sys_ms", "peak_memory_bytes", "cgroup", "landlock_abi", "limits", "outputs"})
    EXPECT_TRUE(j.contains(key)) << "report lacks " << key << r.describe();
  EXPECT_EQ(j.value("exit_code", -1), 4);
  EXPECT_EQ(j.value("command_status", -1), 4);
  EXPECT_TRUE(j["signal"].is_null());
  EXPECT_TRUE(j["wall_ms"].is_number() && j["wall_ms"].get<double>() >= 0);
  EXPECT_TRUE(j["cpu_user_ms"].is_number() && j["cpu_sys_ms"].is_number());
  EXPECT_TRUE(j["peak_memory_bytes"].is_number() || j["peak_memory_bytes"].is_null());
  std::string cg = j.value("cgroup", "");
  EXPECT_TRUE(cg == "v1" || cg == "v2" || cg == "none") << cg;
  EXPECT_TRUE(j["landlock_abi"].is_number_integer());
  EXPECT_TRUE(j["outputs"].is_array());
  ASSERT_TRUE(j["limits"].is_object());
  for (const char* limit : {"memory", "pids", "cpu-time", "timeout", "file-size", "open-files", "tmp-size", "workspace-size"}) {
    ASSERT_TRUE(j["limits"].contains(limit)) << limit << r.describe();
    EXPECT_TRUE(j["limits"][limit].contains("value")) << limit;
    EXPECT_TRUE(j["limits"][limit]["mechanism"].is_string()) << limit;
  }
  EXPECT_EQ(r.out, "out\n");
}

TEST(ExecReport, ReportReflectsTheRequestedLimits) {
  RunResult r = runCorral({"--pids", "77", "--open-files", "99", "--file-size", "3M", "--tmp-size", "5M",
                           "--workspace-size", "6M", "--timeout", "9s", "--cpu-time", "4s"},
                          {"true"});
  ASSERT_TRUE(r.report) << r.describe();
  const auto& l = (*r.report)["limits"];
  EXPECT_EQ(l["pids"].value("value", 0ULL), 77u);
  EXPECT_EQ(l["open-files"].value("value", 0ULL), 99u);
  EXPECT_EQ(l["file-size"].value("value", 0ULL), 3ULL << 20);
  EXPECT_EQ(l["tmp-size"].value("value", 0ULL), 5ULL << 20);
  EXPECT_EQ(l["workspace-size"].value("value", 0ULL), 6ULL << 20);
  EXPECT_EQ(l["timeout"].value("value", 0ULL), 9000u);
  EXPECT_EQ(l["cpu-time"].value("value", 0ULL), 4000u) << r.describe();
}

// A bind beneath another is mounted over it whatever the order given: mounted first, the
// parent bind covered it and it was silently gone.
TEST(ExecRoBind, ANestedBindIsMountedOverItsParentInAnyOrder) {
  TempDir outer("outer"), inner("inner");
  outer.write("sub/.keep", "");
  outer.write("fa", "A\n");
  inner.write("fb", "B\n");
  for (bool nested_first : {true, false}) {
    std::vector<std::string> a = {"--ro-bind", outer.path() + ":/opt/d"}, b = {"--ro-bind", inner.path() + ":/opt/d/sub"};
    std::vector<std::string> opts = nested_first ? b : a;
    opts.insert(opts.end(), (nested_first ? a : b).begin(), (nested_first ? a : b).end());
    RunResult r = runCorral(opts, {"/bin/cat", "/opt/d/fa", "/opt/d/sub/fb"});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_EQ(r.out, "A\nB\n") << (nested_first ? "nested bind given first" : "parent bind given first") << r.describe();
  }
  TempDir bare("bare");  // no mount point for the nested bind in the read-only parent
  bare.write("fa", "A\n");
  RunResult r = runCorral({"--ro-bind", bare.path() + ":/opt/d", "--ro-bind", inner.path() + ":/opt/d/sub"}, {"/bin/true"});
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_NE(r.err.find("its mount point must exist in that host directory"), std::string::npos) << r.describe();
}

TEST(ExecReport, ReportFileEqualsTheStderrReport) {
  TempDir dir("report");
  std::string file = dir / "report.json";
  RunResult r = runCorral({"--report", file}, {"sh", "-c", "exit 2"});
  ASSERT_TRUE(r.report) << r.describe();
  auto from_file = nlohmann::json::parse(dir.read("report.json"), nullptr, false);
  ASSERT_FALSE(from_file.is_discarded()) << "report file is not JSON: " << dir.read("report.json");
  // Timings are the same run's, so the two objects must match exactly.
  EXPECT_EQ(from_file, *r.report);
  EXPECT_EQ(from_file.value("exit_code", -1), 2);
}

TEST(ExecReport, RefusedRunReportsTheError) {
  TempDir dir("report");
  RunResult r = runCorral({"--report", dir / "report.json", "--workspace", dir / "does-not-exist"}, {"true"});
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  auto j = nlohmann::json::parse(dir.read("report.json"), nullptr, false);
  if (j.is_discarded()) GTEST_SKIP() << "no report is written for a run refused at setup";
  EXPECT_EQ(j.value("exit_code", -1), 125);
  EXPECT_TRUE(j.contains("error") && j["error"].is_string() && !j["error"].get<std::string>().empty()) << j.dump();
}

// A hard link at the report's path shares its inode with another file (a 0444 one too, for
// root): the report was written into it. Refused before anything is truncated or run.
TEST(ExecReport, AReportPathThatIsAHardLinkIsRefusedAndTheOtherFileKept) {
  TempDir dir("report");
  dir.write("victim.txt", "precious\n");
  ASSERT_EQ(::link((dir / "victim.txt").c_str(), (dir / "report.json").c_str()), 0);
  dir.write("ws/out", "before\n");
  RunResult r = runCorral({"--report", dir / "report.json", "--workspace", dir / "ws", "--output", "out"},
                          {"sh", "-c", "echo ran > out"});
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_EQ(dir.read("victim.txt"), "precious\n") << "the report was written through a hard link";
  EXPECT_EQ(dir.read("ws/out"), "before\n") << "the command ran";
  ASSERT_EQ(r.stderrLines().size(), 1u) << r.describe();
  EXPECT_NE(r.err.find("hard links"), std::string::npos) << r.describe();
}

TEST(ExecReport, AReportFifoWithNoReaderIsRefusedNotAHang) {
  TempDir dir("report");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  RunOptions o;
  o.deadline = std::chrono::milliseconds(20'000);
  RunResult r = run(corralArgv({"--report", dir / "fifo"}, {"true"}, false), o);
  ASSERT_FALSE(r.deadline_hit) << "corral hung opening the FIFO";
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_NE(r.err.find("no reader"), std::string::npos) << r.describe();
}

TEST(ExecReport, WithoutJsonStderrHoldsOnlyTheCommandsOutput) {
  RunResult r = run(corralArgv({}, {"sh", "-c", "echo err >&2"}, false));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "err\n") << r.describe();
}


// Init closes its end of the sync socket early in its exit, while the namespaces it leaves
// are still being torn down; only then does its pidfd turn readable. corral must sleep
// through that window, not poll an EOF socket in a loop on a CPU the teardown needs (it once
// did: 1-3 ms more per launch, now and then). 500 read-only binds make the teardown long, and
// strace counts corral's own poll(2) calls (not its children's): a sleeping supervisor needs
// one (the pidfd; the exit report waits in the socket), a spinning one made 9-27 in this setup.
TEST(ExecSupervision, CorralSleepsWhileItsInitTearsDown) {
  if (::access("/usr/bin/strace", X_OK) != 0) GTEST_SKIP() << "no strace (scripts/bootstrap.sh installs it)";
  TempDir dir("teardown");
  std::vector<std::string> opts;
  for (int i = 0; i < 500; ++i) {
    const std::string name = "f" + std::to_string(i);
    dir.write(name, "x");
    opts.insert(opts.end(), {"--ro-bind", dir / name + ":/opt/" + name});
  }
  RunOptions o;
  o.env_extra = {"ASAN_OPTIONS=detect_leaks=0"};  // LeakSanitizer cannot run under ptrace
  for (int round = 0; round < 3; ++round) {
    const std::string trace = dir / "poll.trace";
    std::vector<std::string> argv = {"/usr/bin/strace", "-qq", "-e", "trace=poll", "-o", trace};
    for (const std::string& a : corralArgv(opts, {"true"}, false)) argv.push_back(a);
    RunResult r = run(argv, o);
    if (r.err.find("PTRACE") != std::string::npos) GTEST_SKIP() << "ptrace is not allowed here: " << r.err;
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    const std::string text = dir.read("poll.trace");
    size_t polls = 0;
    for (size_t at = text.find("poll("); at != std::string::npos; at = text.find("poll(", at + 1)) ++polls;
    EXPECT_GE(polls, 1u) << "strace saw no poll at all: the test measures nothing";
    EXPECT_LE(polls, 6u) << "corral polled " << polls << " times while its init exited:\n" << text;
  }
}

// corral leaves init's messages (the command's status) in the socket until init has exited,
// and sleeps in one poll(2) from the start of the run to init's exit: the status report does
// not wake it first. Every wake-up of an idle CPU costs a virtual machine dearly (0.2 ms of
// a launch here), and this one bought nothing: the status is only used after init is gone.
TEST(ExecSupervision, CorralWakesOnceWhenItsInitIsDone) {
  if (::access("/usr/bin/strace", X_OK) != 0) GTEST_SKIP() << "no strace (scripts/bootstrap.sh installs it)";
  TempDir dir("wake-once");
  RunOptions o;
  o.env_extra = {"ASAN_OPTIONS=detect_leaks=0"};  // LeakSanitizer cannot run under ptrace
  for (int round = 0; round < 3; ++round) {
    const std::string trace = dir / "poll.trace";
    // stdio on /dev/null: a pipe the caller owns would be relayed (rootless), and the relay's
    // end-of-output is a wake-up of its own, for a reason this test is not about.
    std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$@\" </dev/null >/dev/null 2>&1", "sh",
                                     "/usr/bin/strace", "-qq", "-e", "trace=poll", "-o", trace};
    for (const std::string& a : corralArgv({}, {"sh", "-c", "exit 7"}, false)) argv.push_back(a);
    RunResult r = run(argv, o);
    if (r.err.find("PTRACE") != std::string::npos) GTEST_SKIP() << "ptrace is not allowed here: " << r.err;
    ASSERT_EQ(r.exit_code, 7) << "control: the status still arrives" << r.describe();
    const std::string text = dir.read("poll.trace");
    size_t polls = 0;
    for (size_t at = text.find("poll("); at != std::string::npos; at = text.find("poll(", at + 1)) ++polls;
    EXPECT_EQ(polls, 1u) << "corral woke " << polls << " times during the run:\n" << text;
  }
}

// Init runs the plan's first steps while the parent writes the id maps. When one fails there
// (strace makes the first open_tree fail) and init exits before the parent is done (strace
// slows every write(2), so the parent's map writes), the user must read init's reason, not the
// "Broken pipe" the parent then meets sending "maps ready".
TEST(ExecSupervision, ASetupFailureWhileTheMapsAreWrittenIsReportedByName) {
  if (::access("/usr/bin/strace", X_OK) != 0) GTEST_SKIP() << "no strace (scripts/bootstrap.sh installs it)";
  RunOptions o;
  o.env_extra = {"ASAN_OPTIONS=detect_leaks=0"};  // LeakSanitizer cannot run under ptrace
  std::vector<std::string> argv = {"/usr/bin/strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=open_tree,write",
                                   "-e", "inject=open_tree:error=EACCES:when=1", "-e",
                                   "inject=write:delay_enter=200000"};
  for (const std::string& a : corralArgv({}, {"/bin/echo", "RAN"}, false)) argv.push_back(a);
  RunResult r = run(argv, o);
  if (r.err.find("PTRACE") != std::string::npos) GTEST_SKIP() << "ptrace is not allowed here: " << r.err;
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_EQ(r.out.find("RAN"), std::string::npos) << r.describe();
  // strace may add lines of its own on stderr; corral's are the ones that start "corral: ".
  std::string corral_lines;
  std::istringstream err(r.err);
  for (std::string line; std::getline(err, line);)
    if (line.starts_with("corral: ")) corral_lines += line + "\n";
  EXPECT_EQ(corral_lines, "corral: sandbox setup: clone /usr (/usr): Permission denied\n") << r.describe();
}

// corral moves its new init, and init its network helper, off the CPU each runs on, to get
// the work done side by side (cpu_placement.h, netns.cc). Neither may leave a pin behind: the
// command must run on exactly the CPUs its caller may, whichever CPU corral started on.
std::string cpusAllowed(const std::string& status) {
  const size_t at = status.find("Cpus_allowed_list:");
  if (at == std::string::npos) return "";
  const size_t begin = status.find_first_not_of(" \t", at + 18);
  return status.substr(begin, status.find('\n', begin) - begin);
}

TEST(ExecSupervision, TheCommandRunsOnTheCallersCpusNotAPinLeftByCorral) {
  cpu_set_t mine;
  ASSERT_EQ(::sched_getaffinity(0, sizeof mine, &mine), 0);
  if (CPU_COUNT(&mine) < 2) GTEST_SKIP() << "one CPU: corral places nothing";
  std::ifstream own("/proc/self/status");
  const std::string callers = cpusAllowed(std::string(std::istreambuf_iterator<char>(own), {}));
  ASSERT_FALSE(callers.empty());
  for (int round = 0; round < 8; ++round) {
    RunResult r = run(corralArgv({}, {"/bin/cat", "/proc/self/status"}, false));
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_EQ(cpusAllowed(r.out), callers) << "round " << round;
  }
  // Control: the command does inherit its caller's mask, so a narrower one shows through.
  int first = 0;
  while (!CPU_ISSET(first, &mine)) ++first;
  if (::access("/usr/bin/taskset", X_OK) != 0) GTEST_SKIP() << "no taskset for the control";
  std::vector<std::string> argv = {"/usr/bin/taskset", "-c", std::to_string(first)};
  for (const std::string& a : corralArgv({}, {"/bin/cat", "/proc/self/status"}, false)) argv.push_back(a);
  RunResult narrow = run(argv);
  ASSERT_EQ(narrow.exit_code, 0) << narrow.describe();
  EXPECT_EQ(cpusAllowed(narrow.out), std::to_string(first));
}

// corral narrows init's CPU mask for a moment to move it (cpu_placement.h). A network helper
// that init clones inside that moment inherits the narrow mask, which names init's own CPU.
// init must still place the helper from corral's CPUs and, when the helper is late, move it to
// its own CPU (a busy CPU once stalled a launch 0.57 s). strace delays each process's first
// call of a traced syscall: corral's first sched_setaffinity (the narrowing) by 300 ms, so
// init clones the helper inside the moment, and the helper's unshare by 1 s, well past the maps
// and init's 2 ms patience even when strace slows init's mount work on a loaded machine (init's
// own later unshare and placement call are delayed too).
TEST(ExecSupervision, AHelperClonedWhileInitIsNudgedIsStillPlacedAndRescued) {
  if (::access("/usr/bin/strace", X_OK) != 0) GTEST_SKIP() << "no strace (scripts/bootstrap.sh installs it)";
  cpu_set_t mine;
  ASSERT_EQ(::sched_getaffinity(0, sizeof mine, &mine), 0);
  if (CPU_COUNT(&mine) < 2) GTEST_SKIP() << "one CPU: corral places nothing";
  TempDir dir("helper-rescue");
  const std::string trace = dir / "affinity.trace";
  RunOptions o;
  o.env_extra = {"ASAN_OPTIONS=detect_leaks=0"};  // LeakSanitizer cannot run under ptrace
  std::vector<std::string> argv = {"/usr/bin/strace", "-f", "-qq", "-o", trace, "-e", "trace=sched_setaffinity,unshare",
                                   "-e", "inject=sched_setaffinity:delay_exit=300000:when=1",
                                   "-e", "inject=unshare:delay_enter=1000000:when=1"};
  for (const std::string& a : corralArgv({}, {"/bin/true"}, false)) argv.push_back(a);
  RunResult r = run(argv, o);
  if (r.err.find("PTRACE") != std::string::npos) GTEST_SKIP() << "ptrace is not allowed here: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  // "PID sched_setaffinity(TARGET, SIZE, [CPUS]) = 0": the first caller is corral (the
  // nudge); every other caller is init, placing or moving its helper.
  std::istringstream lines(dir.read("affinity.trace"));
  std::string first_caller;
  int by_init = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("sched_setaffinity(") == std::string::npos) continue;
    const std::string caller = line.substr(0, line.find(' '));
    if (first_caller.empty()) first_caller = caller;
    else if (caller != first_caller) ++by_init;
  }
  ASSERT_FALSE(first_caller.empty()) << "corral made no sched_setaffinity: the test measures nothing";
  EXPECT_GE(by_init, 2) << "init neither placed nor rescued its helper:\n" << dir.read("affinity.trace");
}


// --- Signals reach the command through init, once each. ---

// A python3 inside that counts SIGINT (and SIGTERM) for 0.6 s after it says "ready".
constexpr char kCountSignals[] =
    "import signal,time\n"
    "n={signal.SIGINT:0,signal.SIGTERM:0}\n"
    "def h(s,f): n[s]+=1\n"
    "signal.signal(signal.SIGINT,h); signal.signal(signal.SIGTERM,h)\n"
    "print('ready',flush=True)\n"
    "end=time.time()+0.6\n"
    "while time.time()<end: time.sleep(0.005)\n"
    "print('int=%d term=%d'%(n[signal.SIGINT],n[signal.SIGTERM]),flush=True)\n";

// A terminal's Ctrl-C is SIGINT to corral's whole process group. corral forwards it to init,
// which passes it on: init must not also take it from the group itself (the command then saw
// one Ctrl-C twice, in about 2 launches of 5). Several launches, each one Ctrl-C.
TEST(ExecSignals, ACtrlCToCorralsProcessGroupReachesTheCommandOnce) {
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE(round);
    // setsid(1) execs corral as the leader of a new process group (no fork: Process's child
    // is not a group leader), so the whole group can be signalled as a terminal would.
    Process corral = Process::start({"/usr/bin/setsid", corralBin(), "exec", "--", "python3", "-c", kCountSignals});
    auto ready = corral.readLine(std::chrono::seconds(30));
    ASSERT_TRUE(ready && *ready == "ready") << corral.wait().describe();
    ASSERT_EQ(::kill(-corral.pid(), SIGINT), 0);
    RunResult r = corral.wait();
    EXPECT_EQ(r.out, "ready\nint=1 term=0\n") << r.describe();
    EXPECT_EQ(r.exit_code, 0) << r.describe();
  }
}

// A signal to corral alone (kill PID, as a supervisor sends it) is forwarded, once.
TEST(ExecSignals, ASignalToCorralAloneIsForwardedOnce) {
  Process corral = Process::start({corralBin(), "exec", "--", "python3", "-c", kCountSignals});
  auto ready = corral.readLine(std::chrono::seconds(30));
  ASSERT_TRUE(ready && *ready == "ready") << corral.wait().describe();
  corral.signal(SIGTERM);
  RunResult r = corral.wait();
  EXPECT_EQ(r.out, "ready\nint=0 term=1\n") << r.describe();
  EXPECT_EQ(r.exit_code, 0) << r.describe();
}

// stdout that corral relays (here a named FIFO, which is never handed over) whose reader goes
// away: the command's next write fails as it would on the caller's own pipe (EPIPE, SIGPIPE).
// The relay used to read on and drop the output, so `corral exec -- yes | head -1` (rootless:
// every pipe is relayed) never ended. Likewise a caller's full disk or file-size limit.
TEST(ExecSupervision, ARelayedStdoutWhoseReaderIsGoneEndsTheCommandAsItsOwnPipeWould) {
  TempDir dir("relay-epipe");
  const std::string fifo = dir / "out";
  std::string script = "mkfifo '" + fifo + "' && { head -c 10 <'" + fifo + "' >/dev/null & } && exec";
  for (const std::string& a : corralArgv({}, {"/usr/bin/yes"}, false)) script += " '" + a + "'";
  script += " >'" + fifo + "'";
  RunResult r = run({"/bin/sh", "-c", script}, RunOptions{.deadline = std::chrono::milliseconds(20'000)});
  EXPECT_FALSE(r.deadline_hit) << "the command ran on after its stdout's reader was gone" << r.describe();
  EXPECT_EQ(r.exit_code, 128 + SIGPIPE) << r.describe();
}

}  // namespace
}  // namespace corral::testing
