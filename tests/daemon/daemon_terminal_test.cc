// SPDX-License-Identifier: Apache-2.0
// Session terminals (docs/api.md, Terminals; claims/daemon.toml: daemon.terminal-bounded):
// a tty command on a pseudo-terminal of the sandbox's own devpts, confined like every command;
// `corral session attach` driven through python's pty module (typing, resizing, exit status,
// the terminal's mode restored); the frame protocol by hand over the socket, with hostile
// frames refused; a client that stops reading costs the daemon and the shim bounded memory.
#include <signal.h>

#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

using nlohmann::json;

// One daemon and one session per suite: each test starts its own commands.
class TerminalSuite : public SharedSessionSuite {
 protected:
  // terminal_client.py MODE ARGS: its last stdout line as JSON.
  static json client(const std::vector<std::string>& args, RunResult* raw = nullptr) {
    std::vector<std::string> argv = {"/usr/bin/python3", CORRAL_SOURCE_DIR "/tests/daemon/terminal_client.py", d_->socket(), id_};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult r = run(argv);
    if (raw) *raw = r;
    const std::string last = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
    return json::parse(r.out.empty() ? "null" : last, nullptr, false);
  }
  static json driver(const std::string& mode) {
    RunOptions o;
    o.env_extra = {"CORRAL_SOCKET=" + d_->socket()};
    RunResult r = run({"/usr/bin/python3", CORRAL_SOURCE_DIR "/tests/daemon/attach_driver.py", corralBin(), id_, mode}, o);
    json j = json::parse(r.out, nullptr, false);
    if (!j.is_object()) ADD_FAILURE() << r.describe();
    return j;
  }
};
class DaemonTerminal : public TerminalSuite {};
class DaemonTerminalConfined : public TerminalSuite {};
class DaemonTerminalFramesChecked : public TerminalSuite {};

// ---- daemon.terminal-confined ----

TEST_F(DaemonTerminalConfined, TtyCommandIsConfinedLikeExecOnTheSandboxesOwnDevpts) {
  const std::string script =
      "stty size; tty; ls /dev/pts | tr '\\n' ' '; echo; id -u; "
      "grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; "
      "ls /proc/self/fd | tr '\\n' ' '; echo; "
      "(echo x > /proc/self/comm) 2>/dev/null && echo comm=writable || echo comm=denied; "
      "test -t 0 && test -t 1 && test -t 2 && echo all-tty; "
      "read line; echo got=$line; exit 7";
  json j = client({"run", "33", "101", "hello\n", json(std::vector<std::string>{"sh", "-c", script}).dump()});
  ASSERT_TRUE(j.is_object()) << j;
  std::string out = j["output"].get<std::string>();
  // The terminal echoes the input the moment it arrives, which can be in the middle of any line
  // the script prints before its read (seen under ASan: "0 ptmx hello\r\n\r\n"): the echo is
  // taken out before the lines are checked. It always comes before the read's "got=".
  if (const size_t echo = out.find("hello\r\n"); echo != std::string::npos && echo < out.find("got=hello")) out.erase(echo, 7);
  ASSERT_TRUE(j["exit"].is_object()) << j;
  EXPECT_EQ(j["exit"]["exit_code"], 7) << j;
  EXPECT_NE(out.find("33 101"), std::string::npos) << out;
  // The sandbox's own devpts instance: its first terminal, and nothing of the host's (this test
  // runs under ctest, whose python driver holds host terminals of its own in other tests).
  EXPECT_NE(out.find("/dev/pts/0\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("0 ptmx \r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\n1000\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("CapEff:\t0000000000000000"), std::string::npos) << out;
  EXPECT_NE(out.find("CapBnd:\t0000000000000000"), std::string::npos) << out;
  EXPECT_NE(out.find("NoNewPrivs:\t1"), std::string::npos) << out;
  EXPECT_NE(out.find("Seccomp:\t2"), std::string::npos) << out;
  // Only stdio (the terminal) and ls's own directory: nothing inherited.
  EXPECT_NE(out.find("\r\n0 1 2 3 \r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("comm=denied"), std::string::npos) << "Landlock is not applied to a tty command: " << out;
  EXPECT_NE(out.find("all-tty"), std::string::npos) << out;
  EXPECT_NE(out.find("got=hello"), std::string::npos) << out;
  // The report is exec's; output went to the terminal, so none is spooled.
  EXPECT_EQ(j["exit"]["stdout_bytes"], 0) << j;
}

// ---- the terminal's behaviour ----

TEST_F(DaemonTerminal, ResizeFramesReachTheCommandsTerminal) {
  json j = client({"resize"});
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j["sizes"], json({"24 80", "40 120"})) << j;
  EXPECT_EQ(j["exit"]["exit_code"], 0) << j;
}

TEST_F(DaemonTerminal, AttachThroughAPseudoTerminalTypesResizesAndExitsWithTheShellsStatus) {
  json j = driver("shell");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["answer"], "42") << j;
  EXPECT_EQ(j["sizes"], json({"30 90", "50 132"})) << j;
  EXPECT_EQ(j["status"], 5) << j;
  EXPECT_EQ(j["restored"], true) << "attach left the terminal raw: " << j;
}

TEST_F(DaemonTerminal, AttachRestoresTheTerminalWhenItIsKilled) {
  json j = driver("signal");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["ready"], true) << j;
  EXPECT_EQ(j["raw_meanwhile"], true) << "control: attach never made the terminal raw, so restoring proves nothing: " << j;
  EXPECT_EQ(j["status"], 128 + SIGTERM) << j;
  EXPECT_EQ(j["restored"], true) << "attach left the terminal raw after SIGTERM: " << j;
}

// ---- daemon.terminal-frames-checked ----

TEST_F(DaemonTerminalFramesChecked, HostileFramesAreRefusedTheConnectionClosedAndTheDaemonUnharmed) {
  for (const char* name : {"oversized", "just-over", "unknown-type", "exit-from-client", "resize-zero", "resize-absurd",
                           "resize-short", "garbage"}) {
    RunResult raw;
    json j = client({"hostile", name}, &raw);
    ASSERT_TRUE(j.is_object()) << name << ": " << raw.describe();
    EXPECT_TRUE(j["error"].is_object()) << name << ": no error frame: " << j;
    if (j["error"].is_object()) {
      EXPECT_EQ(j["error"]["error"]["code"], "invalid_frame") << j;
    }
    EXPECT_EQ(j["closed"], true) << name << ": the connection stayed open: " << j;
  }
  EXPECT_EQ(d_->curl("GET", "/v1/health").status, 200) << d_->stderrText();
  // Still serving terminals.
  json ok = client({"run", "24", "80", "", json(std::vector<std::string>{"sh", "-c", "echo still-here"}).dump()});
  ASSERT_TRUE(ok.is_object());
  EXPECT_NE(ok["output"].get<std::string>().find("still-here"), std::string::npos) << ok;
}

TEST_F(DaemonTerminalFramesChecked, TerminalRequestsOutsideTheProtocolAreRefused) {
  auto started = d_->curl("POST", "/v1/sessions/" + id_ + "/commands", R"({"argv":["sleep","30"],"tty":{"rows":24,"cols":80}})");
  ASSERT_EQ(started.status, 201) << started.body;
  EXPECT_EQ(started.json()["tty"], true) << started.body;
  const std::string base = "/v1/sessions/" + id_ + "/commands/" + std::to_string(started.json()["id"].get<int>());
  auto plain = d_->curl("GET", base + "/terminal");
  EXPECT_EQ(plain.status, 426) << plain.body;
  EXPECT_EQ(plain.json()["error"]["code"], "upgrade_required") << plain.body;
  auto wrong = d_->curl("GET", base + "/terminal", "", {"-H", "Connection: Upgrade", "-H", "Upgrade: websocket"});
  EXPECT_EQ(wrong.status, 426) << wrong.body;
  // A tty command has no stdin pipe (its terminal is its stdin).
  EXPECT_EQ(d_->curl("POST", base + "/stdin", "x").status, 409);
  for (const char* bad : {R"({"argv":["true"],"tty":{"rows":0,"cols":80}})", R"({"argv":["true"],"tty":{"rows":24,"cols":70000}})",
                          R"({"argv":["true"],"tty":{"rows":24}})", R"({"argv":["true"],"tty":{"rows":24,"cols":80,"x":1}})",
                          R"({"argv":["true"],"tty":{"rows":24,"cols":80},"stdin":true})", R"({"argv":["true"],"tty":true})"}) {
    auto r = d_->curl("POST", "/v1/sessions/" + id_ + "/commands", bad);
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
  }
  EXPECT_EQ(d_->curl("POST", base + "/signal", R"({"signal":9})").status, 200);
}

// ---- daemon.terminal-bounded ----

TEST(DaemonTerminalBounded, AReaderThatStopsStopsTheCommandNotTheDaemonsMemory) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty()) << d.stderrText();
  const std::vector<pid_t> shims = shimProcesses(d.stateDir());
  ASSERT_EQ(shims.size(), 1u);
  constexpr int kStallS = 4;
  Process p = Process::start({"/usr/bin/python3", CORRAL_SOURCE_DIR "/tests/daemon/terminal_client.py", d.socket(), id, "slow",
                              std::to_string(kStallS), "2"});
  ASSERT_EQ(p.readLine(std::chrono::seconds(60)).value_or(""), "stalled");
  const long daemon_before = rssKiB(d.pid()), shim_before = rssKiB(shims[0]);
  long daemon_peak = daemon_before, shim_peak = shim_before;
  for (int i = 0; i < kStallS * 10 - 5; ++i) {  // `yes` writes as fast as it can all the while
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    daemon_peak = std::max(daemon_peak, rssKiB(d.pid()));
    shim_peak = std::max(shim_peak, rssKiB(shims[0]));
  }
  // Its report is its last line, read once it exited (readLine gives up on a line that comes
  // with the exit itself).
  const RunResult r = p.wait();
  const std::string line = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  json j = json::parse(line, nullptr, false);
  ASSERT_TRUE(j.is_object()) << "the slow client never reported: " << r.describe();
  const double rate = j["read_bytes"].get<double>() / j["read_s"].get<double>();  // bytes/s once it reads
  constexpr long kBoundKiB = 8 * 1024;
  EXPECT_LT(daemon_peak - daemon_before, kBoundKiB) << "the daemon grew while its terminal client read nothing";
  EXPECT_LT(shim_peak - shim_before, kBoundKiB) << "the shim grew while the terminal client read nothing";
  // Control: the command writes fast enough that holding its output would have crossed the
  // bound during the stall, so staying under it shows the output was not held.
  EXPECT_GT(rate * kStallS, 2.0 * kBoundKiB * 1024) << "control: `yes` wrote too slowly (" << rate
                                                  << " B/s) for the bound to mean anything";
  EXPECT_EQ(d.curl("GET", "/v1/health").status, 200);
}

}  // namespace
}  // namespace corral::testing
