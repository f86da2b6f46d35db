// SPDX-License-Identifier: Apache-2.0
// The launcher's proxy process (src/cli/egress_process.h): a `corral exec --net proxy` run has
// its egress proxy in a corral-core process started beside the sandbox. It must end with corral
// however corral ends (pidns.no-survivors), a proxy that dies lets nothing out and fails the
// run (egress.allowlist-only), and the terminal's Ctrl-C is the command's, not the proxy's.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "egress_fixture.h"
#include "harness.h"

namespace corral::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string readProcFile(pid_t pid, const char* name) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

pid_t parentOf(pid_t pid) {
  const std::string stat = readProcFile(pid, "stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 2));
  char state;
  pid_t ppid = -1;
  rest >> state >> ppid;
  return ppid;
}

// Every live process with the proxy command among its arguments (after argv[0]: a script
// standing in for corral-core has its own path first; zombies have an empty cmdline).
std::vector<pid_t> egressProcesses() {
  std::vector<pid_t> found;
  DIR* d = ::opendir("/proc");
  if (!d) return found;
  while (dirent* e = ::readdir(d)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    const std::string cmdline = readProcFile(pid, "cmdline");
    if (cmdline.find(std::string("\0__egress-serve\0", 16)) != std::string::npos) found.push_back(pid);
  }
  ::closedir(d);
  return found;
}

// The proxy process corral `parent` started, waiting up to 5 s for it to appear.
pid_t egressOf(pid_t parent) {
  for (int i = 0; i < 100; ++i) {
    for (pid_t p : egressProcesses())
      if (parentOf(p) == parent) return p;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return -1;
}

// The process no longer exists (reaped), or with `zombie_ok` has at least stopped running.
bool goneWithin(pid_t pid, milliseconds timeout, bool zombie_ok = false) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    const std::string stat = readProcFile(pid, "stat");
    if (stat.empty()) return true;
    const size_t close = stat.rfind(')');
    if (zombie_ok && close != std::string::npos && stat.compare(close + 2, 1, "Z") == 0) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

std::vector<std::string> proxiedShell(const std::string& script, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {corralBin(), "exec", "--net", "proxy", "--timeout", "60s"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
  return argv;
}

// --- pidns.no-survivors: corral killed from outside leaves no proxy process either. ---

TEST(PidnsNoSurvivors, KillingCorralLeavesNoEgressProxy) {
  for (int sig : {SIGKILL, SIGTERM}) {
    SCOPED_TRACE(strsignal(sig));
    Process corral = Process::start(proxiedShell("echo ready; exec sleep 60"));
    auto ready = corral.readLine(seconds(30));
    ASSERT_TRUE(ready && *ready == "ready") << corral.wait().describe();
    const pid_t proxy = egressOf(corral.pid());
    ASSERT_GT(proxy, 0) << "control: the run's proxy process must be visible beside corral";
    corral.signal(sig);
    if (!corral.exitedWithin(seconds(3))) corral.signal(SIGKILL);
    RunResult r = corral.wait();
    const bool gone = goneWithin(proxy, seconds(5));
    EXPECT_TRUE(gone) << claim("pidns.no-survivors", std::string("after ") + strsignal(sig) +
                                                      " to corral, its egress proxy (pid " + std::to_string(proxy) +
                                                      ") survives")
                      << r.describe();
    if (!gone) ::kill(proxy, SIGKILL);
  }
}

// --- egress.allowlist-only: the proxy is the only way out, also when it dies. ---

// The proxy killed while the command runs: the command's next request through a granted grant
// gets nowhere, and corral reports the run as its own failure (125) on one line.
TEST(EgressAllowlistOnly, AProxyThatDiesMidRunLetsNothingOutAndFailsTheRun) {
  EgressServers s;
  REQUIRE_SERVERS(s);
  const std::string url = s.httpUrl() + "/hello";
  Process corral = Process::start(
      proxiedShell("echo ready; read go; curl -s -o /dev/null --max-time 10 -w '%{http_code}' '" + url +
                       "'; echo \" curl=$?\"",
                   {"--allow", s.httpUrl()}),
      RunOptions{.stdin_pipe = true});
  auto ready = corral.readLine(seconds(30));
  ASSERT_TRUE(ready && *ready == "ready") << corral.wait().describe();
  const pid_t proxy = egressOf(corral.pid());
  ASSERT_GT(proxy, 0) << "control: the run's proxy process must be visible beside corral";
  const int before = s.count(false);
  ASSERT_EQ(::kill(proxy, SIGKILL), 0);
  ASSERT_TRUE(goneWithin(proxy, seconds(5), /*zombie_ok=*/true));
  corral.closeStdin();  // `read go` returns: the command goes on to its request
  RunResult r = corral.wait();
  EXPECT_EQ(s.count(false), before) << claim("egress.allowlist-only", "a request arrived with the proxy dead")
                                    << r.describe();
  EXPECT_EQ(r.out.find("200"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find(" curl="), std::string::npos) << "the command must have run to its end" << r.describe();
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_EQ(r.err, "corral: --net proxy: the egress proxy (corral-core) ended with killed by signal 9\n")
      << r.describe();
}

// The audit side of the same death: what got out before it is still in the report. The proxy
// records each event in a file the launcher reads after it ended (cli/egress_process.h); a
// proxy that kept them in memory until its stop took them with it.
TEST(EgressAllowlistOnly, AProxyThatDiesMidRunLeavesWhatWentOutBeforeInTheReport) {
  EgressServers s;
  REQUIRE_SERVERS(s);
  const std::string url = s.httpUrl() + "/before-the-death";
  Process corral = Process::start(
      proxiedShell("curl -sS -o /dev/null --max-time 10 -w '%{http_code}' '" + url +
                       "'; echo; echo ready; read go; curl -s -o /dev/null --max-time 10 '" + url + "'; echo done",
                   {"--allow", s.httpUrl(), "--json"}),
      RunOptions{.stdin_pipe = true});
  auto first = corral.readLine(seconds(30));
  ASSERT_TRUE(first && *first == "200") << "control: the first request must get through" << corral.wait().describe();
  auto ready = corral.readLine(seconds(30));
  ASSERT_TRUE(ready && *ready == "ready") << corral.wait().describe();
  const pid_t proxy = egressOf(corral.pid());
  ASSERT_GT(proxy, 0) << "control: the run's proxy process must be visible beside corral";
  // The event is made when the proxy sees the connection end, a moment after curl has its
  // answer: wait until its line is in the events file (fd 5) before the kill.
  const std::string events_file = "/proc/" + std::to_string(proxy) + "/fd/5";
  struct stat st{};
  for (int i = 0; i < 500 && (::stat(events_file.c_str(), &st) != 0 || st.st_size == 0); ++i)
    std::this_thread::sleep_for(milliseconds(10));
  ASSERT_GT(st.st_size, 0) << "control: the proxy recorded the first request";
  ASSERT_EQ(::kill(proxy, SIGKILL), 0);
  ASSERT_TRUE(goneWithin(proxy, seconds(5), /*zombie_ok=*/true));
  corral.closeStdin();
  RunResult r = corral.wait();
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  ASSERT_TRUE(r.report) << r.describe();
  EXPECT_EQ((*r.report)["error"], "--net proxy: the egress proxy (corral-core) ended with killed by signal 9")
      << r.describe();
  const auto& events = (*r.report)["egress"];
  ASSERT_TRUE(events.is_array()) << r.describe();
  ASSERT_EQ(events.size(), 1u) << claim("egress.allowlist-only",
                                        "the request that went out before the proxy died is missing from the report")
                               << r.describe();
  EXPECT_EQ(events[0]["decision"], "allow") << r.describe();
  EXPECT_EQ(events[0]["status"], 200) << r.describe();
  EXPECT_GT(events[0]["bytes_down"].get<int>(), 0) << r.describe();
}

// A sandbox that floods the proxy with requests grows the record, and with it the host's
// memory outside any limit of the run (1.25 KB of proxy memory per refused request, and a
// report of 24 MB for 50,000). The first 20,000 events of a kind are recorded one by one,
// the rest counted by decision and rule; the run and its report stay whole.
TEST(EgressAllowlistOnly, AFloodOfRequestsIsRecordedUpToABoundAndCountedPastIt) {
  const std::string flood = R"PY(
import socket
for i in range(20006):
    c = socket.create_connection(("127.0.0.1", 3128))
    c.sendall(b"GET http://flood.invalid/ HTTP/1.1\r\nHost: flood.invalid\r\n\r\n")
    while c.recv(4096):
        pass
    c.close()
print("sent")
)PY";
  std::vector<std::string> argv = {corralBin(), "exec", "--net", "proxy", "--timeout", "120s", "--json",
                                   "--", "python3", "-c", flood};
  RunResult r = run(argv, RunOptions{.deadline = std::chrono::milliseconds(150'000)});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "sent\n");
  ASSERT_TRUE(r.report) << r.describe();
  EXPECT_EQ((*r.report)["egress"].size(), 20000u);
  EXPECT_EQ((*r.report)["egress_overflow"], nlohmann::json::parse(R"({"egress": {"refuse/no-grant": 6}})"))
      << claim("egress.allowlist-only", "the events past the bound were not counted") << (*r.report)["egress_overflow"];
}

// Each event is bounded too: a method is the sandbox's to choose, up to the request line's
// 8 KiB, and 20,000 events with an 8 KB method made a 168 MB report. A long one is recorded
// by its hash.
TEST(EgressAllowlistOnly, ALongMethodIsRecordedByItsHash) {
  const std::string script = R"PY(
import socket
c = socket.create_connection(("127.0.0.1", 3128))
c.sendall(b"M" * 5000 + b" http://flood.invalid/ HTTP/1.1\r\nHost: flood.invalid\r\n\r\n")
print(c.recv(4096).split(b"\r\n")[0].decode())
)PY";
  RunResult r = run({corralBin(), "exec", "--net", "proxy", "--json", "--", "python3", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  ASSERT_TRUE(r.report) << r.describe();
  ASSERT_EQ((*r.report)["egress"].size(), 1u) << r.report->dump();
  const std::string method = (*r.report)["egress"][0].value("method", "");
  EXPECT_TRUE(method.starts_with("sha256:") && method.size() == 71)
      << claim("egress.allowlist-only", "a 5,000-byte method went into the record as sent") << method.size();
}

// Control for the tests above: the same run, proxy left alone, gets its 200.
TEST(EgressAllowlistOnly, ControlWithTheProxyAliveTheSameRequestArrives) {
  EgressServers s;
  REQUIRE_SERVERS(s);
  const std::string url = s.httpUrl() + "/hello";
  RunResult r = run(proxiedShell("curl -sS -o /dev/null --max-time 10 -w '%{http_code}' '" + url + "'; echo \" curl=$?\"",
                                 {"--allow", s.httpUrl()}));
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "200 curl=0\n") << r.describe();
}

// --- The terminal's signals: Ctrl-C (SIGINT to corral's whole process group) is forwarded to
// the command by corral; the proxy ignores it and serves to the end, so the run ends as the
// command decides and the report still has the proxy's events. ---

TEST(ExecEgressProcess, CtrlCIsTheCommandsAndTheProxyServesToTheEnd) {
  EgressServers s;
  REQUIRE_SERVERS(s);
  const std::string url = s.httpUrl() + "/after-interrupt";
  // setsid(1) execs corral as the leader of a new process group (no fork: Process's child is
  // not a group leader), so the whole group can be signalled as a terminal would.
  std::vector<std::string> argv = {"/usr/bin/setsid"};
  for (const std::string& a :
       proxiedShell("trap 'curl -sS -o /dev/null --max-time 10 -w \"%{http_code}\" \"" + url +
                        "\"; echo \" interrupted\"; exit 3' INT; echo ready; while :; do sleep 0.05; done",
                    {"--allow", s.httpUrl(), "--json"}))
    argv.push_back(a);
  Process corral = Process::start(argv);
  auto ready = corral.readLine(seconds(30));
  ASSERT_TRUE(ready && *ready == "ready") << corral.wait().describe();
  ASSERT_GT(egressOf(corral.pid()), 0) << "control: the run's proxy process must be visible beside corral";
  ASSERT_EQ(::kill(-corral.pid(), SIGINT), 0);
  RunResult r = corral.wait();
  EXPECT_EQ(r.exit_code, 3) << r.describe();
  EXPECT_NE(r.out.find("200 interrupted"), std::string::npos) << "the request after Ctrl-C got through" << r.describe();
  ASSERT_TRUE(r.report) << r.describe();
  ASSERT_TRUE((*r.report)["egress"].is_array()) << r.describe();
  EXPECT_EQ((*r.report)["egress"].size(), 1u) << r.describe();
  EXPECT_TRUE(r.stderrLines().empty()) << r.describe();
}

// --- A proxy that cannot start, or is slow to: one line, 125, and the command never runs. ---

// A launcher copied beside a corral-core of our making (`core` as its content; "" makes it a
// directory).
struct LauncherWithCore {
  TempDir bin{"egress-core"};
  explicit LauncherWithCore(const std::string& core, mode_t mode = 0755) {
    bin.write("corral", readHostFile(corralBin()), 0755);
    if (core.empty()) ::mkdir((bin / "corral-core").c_str(), 0755);
    else bin.write("corral-core", core, mode);
  }
  std::string launcher() const { return bin / "corral"; }
};

std::string realCore() { return corralBin().substr(0, corralBin().rfind('/') + 1) + "corral-core"; }

TEST(ExecEgressProcess, AProxyThatCannotStartRefusesTheRunOnOneLine) {
  struct Case {
    const char* name;
    std::string core;
    bool lease;
    std::string error;  // after "corral: --net proxy: "
  };
  const std::vector<Case> cases = {
      {"a directory", "", false, "cannot start CORE: not a regular file"},
      // exec fails (ENOEXEC): only the child sees that, after the launcher went on.
      {"not a program", std::string("\x7f" "ELF garbage"), false, "cannot start CORE: Exec format error"},
      {"exits at once, with a lease", "#!/bin/sh\nexit 3\n", true,
       "the egress proxy (corral-core) ended before it served (exit status 3)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    LauncherWithCore l(c.core);
    std::vector<std::string> argv = {l.launcher(), "exec", "--net", "proxy"};
    if (c.lease) argv.insert(argv.end(), {"--credential", "t=CORRAL_TEST_TOKEN@https://api.example.com"});
    argv.insert(argv.end(), {"--", "/bin/echo", "RAN"});
    RunResult r = run(argv, RunOptions{.env_extra = {"CORRAL_TEST_TOKEN=test-token-value-1234"}});
    std::string want = c.error;
    if (const size_t at = want.find("CORE"); at != std::string::npos) want.replace(at, 4, l.bin / "corral-core");
    EXPECT_EQ(r.exit_code, 125) << r.describe();
    EXPECT_EQ(r.out, "") << "the command ran" << r.describe();
    EXPECT_EQ(r.err, "corral: --net proxy: " + want + "\n") << r.describe();
  }
}

// Ctrl-C while the launch waits for a slow proxy (a lease makes it wait): the launch ends at
// once, on one line, and the command never starts.
TEST(ExecEgressProcess, ACtrlCWhileTheProxyStartsEndsTheLaunch) {
  LauncherWithCore l("#!/bin/sh\nsleep 5\nexec " + realCore() + " \"$@\"\n");
  Process corral = Process::start({"/usr/bin/setsid", l.launcher(), "exec", "--net", "proxy", "--credential",
                                   "t=CORRAL_TEST_TOKEN@https://api.example.com", "--", "/bin/echo", "RAN"},
                                  RunOptions{.env_extra = {"CORRAL_TEST_TOKEN=test-token-value-1234"}});
  ASSERT_GT(egressOf(corral.pid()), 0) << "control: the proxy process must have started";
  std::this_thread::sleep_for(milliseconds(300));
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(-corral.pid(), SIGINT), 0);
  const bool ended = corral.exitedWithin(seconds(3));
  const auto took = std::chrono::steady_clock::now() - sent;
  if (!ended) corral.signal(SIGKILL);
  RunResult r = corral.wait();
  EXPECT_TRUE(ended) << "corral waited for the proxy instead of ending" << r.describe();
  EXPECT_LT(took, seconds(3));
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_EQ(r.out, "") << "the command ran" << r.describe();
  EXPECT_EQ(r.err, "corral: --net proxy: interrupted by SIGINT before the command started\n") << r.describe();
}

}  // namespace
}  // namespace corral::testing
