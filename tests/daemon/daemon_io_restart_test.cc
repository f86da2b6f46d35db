// SPDX-License-Identifier: Apache-2.0
// A command's stdin and its terminal survive a daemon restart (docs/daemon.md, Surviving the
// daemon): the shim keeps a copy of each, and a restarted daemon gets it back over the control
// link on the first request that needs it. kill -9 while a terminal is attached, while it is
// detached, and while a stdin is open; real clients (raw frames from terminal_reattach.py, curl).
// claims/daemon.toml: daemon.terminal-reattach, daemon.terminal-one-client.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string base64Decode(const std::string& in) {
  static const std::string abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : in) {
    const size_t v = abc.find(ch);
    if (v == std::string::npos) continue;  // padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

// The NDJSON output stream's stdout, decoded, and its exit code (-1: none).
std::pair<std::string, int> outputOf(const Daemon& d, const std::string& base) {
  auto out = d.curl("GET", base + "/output");
  std::string text;
  int code = -1;
  size_t pos = 0;
  while (pos < out.body.size()) {
    const size_t nl = out.body.find('\n', pos);
    json j = json::parse(out.body.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos), nullptr, false);
    pos = nl == std::string::npos ? out.body.size() : nl + 1;
    if (!j.is_object()) continue;
    if (j.contains("stream") && j["stream"] == "stdout") text += base64Decode(j["data"].get<std::string>());
    if (j.contains("exit")) code = j["exit"].value("exit_code", -1);
  }
  return {text, code};
}

class Restarted : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(d_.start()) << d_.stderrText();
    id_ = d_.createSession();
    ASSERT_FALSE(id_.empty()) << d_.stderrText();
  }
  // kill -9, a pause with no daemon, a new daemon on the same state directory.
  void restart(std::chrono::milliseconds gap = 500ms) {
    const pid_t old = d_.pid();
    d_.kill9();
    std::this_thread::sleep_for(gap);
    ASSERT_TRUE(d_.start()) << d_.stderrText();
    ASSERT_NE(d_.pid(), old);
  }
  std::string started(const std::string& body) {
    auto s = d_.curl("POST", "/v1/sessions/" + id_ + "/commands", body);
    EXPECT_EQ(s.status, 201) << s.body;
    return "/v1/sessions/" + id_ + "/commands/" + std::to_string(s.json().value("id", 0));
  }
  // terminal_reattach.py MODE: it prints KILL, the daemon is restarted, its stdin closed.
  json terminalScript(const std::string& mode) {
    RunOptions o;
    o.env_extra = {"CORRAL_SOCKET=" + d_.socket()};
    o.stdin_pipe = true;
    o.deadline = 180'000ms;
    Process p = Process::start({"/usr/bin/python3", CORRAL_SOURCE_DIR "/tests/daemon/terminal_reattach.py", d_.socket(), id_, mode}, o);
    auto line = p.readLine(120'000ms);
    if (!line || *line != "KILL") {
      ADD_FAILURE() << "no KILL line: " << p.wait().describe();
      return nullptr;
    }
    restart(4000ms);  // the shell writes 2 s after the kill
    p.closeStdin();
    RunResult r = p.wait();
    const std::string last = r.out.empty() ? "" : r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
    json j = json::parse(last.empty() ? "null" : last, nullptr, false);
    if (!j.is_object()) ADD_FAILURE() << r.describe() << d_.stderrText();
    // Nothing the terminal carried reaches the daemon's log (byte counts only).
    EXPECT_EQ(d_.stderrText().find("no-daemon"), std::string::npos) << "terminal output in the daemon's log";
    return j;
  }
  Daemon d_;
  std::string id_;
};

class DaemonTerminalRestart : public Restarted {};
class DaemonStdinRestart : public Restarted {};

void expectSameShell(const json& j) {
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["old_closed"], true) << "control: the old daemon's connection should have died with it: " << j;
  EXPECT_EQ(j["pid1"], j["pid2"]) << "the shell after the restart is another process: " << j;
  EXPECT_EQ(j["seen"], "written-while-42-no-daemon") << "what the shell wrote while no daemon ran was lost: " << j;
  EXPECT_EQ(j["second_status"], 409) << "daemon.terminal-one-client broken across a restart: " << j;
  ASSERT_TRUE(j["exit"].is_object()) << j;
  EXPECT_EQ(j["exit"]["exit_code"], 5) << j;
}

TEST_F(DaemonTerminalRestart, AKillWhileAttachedLeavesTheShellAndANewDaemonReattachesToIt) {
  expectSameShell(terminalScript("restart-attached"));
}

TEST_F(DaemonTerminalRestart, AKillWhileDetachedLeavesTheShellAndANewDaemonReattachesToIt) {
  expectSameShell(terminalScript("restart-detached"));
}

TEST_F(DaemonTerminalRestart, ControlACommandThatEndedWhileNoDaemonRanGivesOneAttachItsReportThenNone) {
  json j = terminalScript("restart-ended");
  ASSERT_TRUE(j.is_object());
  // Its saved (empty) scrollback and its own exit code, once: the ring file the old daemon left.
  EXPECT_EQ(j["first_status"], 101) << j;
  EXPECT_EQ(j["first_exit"]["exit_code"], 6) << j;
  EXPECT_EQ(j["after_status"], 409) << j;
  EXPECT_NE(j["after"].dump().find("has ended"), std::string::npos) << j;
  EXPECT_EQ(j["report"]["exit_code"], 6) << j;
}

TEST_F(DaemonStdinRestart, AnOpenStdinTakesWritesAfterAKillAndEndsOnlyOnDelete) {
  const std::string base = started(R"({"argv":["cat"],"stdin":true})");
  EXPECT_EQ(d_.curl("POST", base + "/stdin", "before-").status, 200);
  restart();
  // No end of file from the daemon's death: cat still runs a while after the restart.
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(d_.curl("GET", base).json()["state"], "running") << "the daemon's death ended the command's stdin";
  auto after = d_.curl("POST", base + "/stdin", "after\n");
  EXPECT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(after.json()["bytes"], 6) << after.body;
  EXPECT_EQ(d_.curl("POST", base + "/stdin", "more\n").status, 200);
  EXPECT_EQ(d_.curl("GET", base).json()["state"], "running");
  auto closed = d_.curl("DELETE", base + "/stdin");
  EXPECT_EQ(closed.status, 200) << closed.body;
  auto [text, code] = outputOf(d_, base);
  EXPECT_EQ(text, "before-after\nmore\n");
  EXPECT_EQ(code, 0) << "cat did not end on DELETE: a copy of its stdin stayed open";
  EXPECT_EQ(d_.curl("POST", base + "/stdin", "late").status, 409);
  EXPECT_EQ(d_.curl("DELETE", base + "/stdin").status, 409);
  EXPECT_NE(d_.stderrText().find("command_io_reobtained"), std::string::npos) << d_.stderrText();
  for (const char* sentinel : {"before-", "after", "more"})  // stdin's bytes are never logged
    EXPECT_EQ(d_.stderrText().find(sentinel), std::string::npos) << sentinel;
}

TEST_F(DaemonStdinRestart, ADeleteAfterAKillClosesTheShimsCopy) {
  // The restarted daemon holds no copy: DELETE closes the shim's, and that is cat's end of file.
  const std::string base = started(R"({"argv":["cat"],"stdin":true})");
  EXPECT_EQ(d_.curl("POST", base + "/stdin", "only-before\n").status, 200);
  restart();
  auto closed = d_.curl("DELETE", base + "/stdin");
  EXPECT_EQ(closed.status, 200) << closed.body;
  auto [text, code] = outputOf(d_, base);
  EXPECT_EQ(text, "only-before\n");
  EXPECT_EQ(code, 0);
  EXPECT_EQ(d_.curl("POST", base + "/stdin", "late").status, 409);
}

TEST_F(DaemonStdinRestart, ControlAStdinClosedBeforeTheKillStaysClosedAndOthersAreRefusedAsBefore) {
  const std::string closed_first = started(R"({"argv":["cat"],"stdin":true})");
  EXPECT_EQ(d_.curl("POST", closed_first + "/stdin", "x\n").status, 200);
  EXPECT_EQ(d_.curl("DELETE", closed_first + "/stdin").status, 200);
  const std::string no_stdin = started(R"({"argv":["sleep","30"]})");
  const std::string tty = started(R"({"argv":["sleep","30"],"tty":{"rows":24,"cols":80}})");
  restart();
  auto [text, code] = outputOf(d_, closed_first);
  EXPECT_EQ(text, "x\n");
  EXPECT_EQ(code, 0);
  EXPECT_EQ(d_.curl("POST", closed_first + "/stdin", "late").status, 409);
  EXPECT_EQ(d_.curl("POST", no_stdin + "/stdin", "x").status, 409);
  // A terminal's master is no stdin, after a restart too (and it stays the terminal's).
  EXPECT_EQ(d_.curl("POST", tty + "/stdin", "x").status, 409);
  EXPECT_EQ(d_.curl("DELETE", tty + "/stdin").status, 409);
  EXPECT_EQ(d_.curl("POST", "/v1/sessions/" + id_ + "/commands/999999/stdin", "x").status, 404);
  for (const std::string& b : {no_stdin, tty}) EXPECT_EQ(d_.curl("POST", b + "/signal", R"({"signal":9})").status, 200);
}

TEST(DaemonStdinRestartUid, RootAnotherUidCannotTakeAStdinOrTerminalAfterARestart) {
  CORRAL_REQUIRE_ROOT("the test connects as uid 65534 to a root daemon");
  Daemon d({"--allow-group", "nogroup"});
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  auto s1 = d.curl("POST", "/v1/sessions/" + id + "/commands", R"({"argv":["cat"],"stdin":true})");
  auto s2 = d.curl("POST", "/v1/sessions/" + id + "/commands", R"({"argv":["sleep","30"],"tty":{"rows":24,"cols":80}})");
  ASSERT_EQ(s1.status, 201);
  ASSERT_EQ(s2.status, 201);
  const std::string in = "/v1/sessions/" + id + "/commands/" + std::to_string(s1.json()["id"].get<int>());
  const std::string term = "/v1/sessions/" + id + "/commands/" + std::to_string(s2.json()["id"].get<int>());
  d.kill9();
  ASSERT_TRUE(d.start()) << d.stderrText();
  ASSERT_EQ(::chmod(d.stateDir().c_str(), 0755), 0);
  auto as = [&](std::optional<uid_t> uid, const std::vector<std::string>& args) {
    RunOptions o;
    o.as_user = uid;
    std::vector<std::string> argv = {"/usr/bin/curl", "-sS", "--unix-socket", d.socket(), "-o", "-", "-w", "\n%{http_code}", "--max-time", "5"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, o);
  };
  const std::string url = "http://corral";
  EXPECT_NE(as(kNobody, {"-X", "POST", "--data-binary", "sentinel", url + in + "/stdin"}).out.find("\n404"), std::string::npos);
  EXPECT_NE(as(kNobody, {"-X", "DELETE", url + in + "/stdin"}).out.find("\n404"), std::string::npos);
  EXPECT_NE(as(kNobody, {"-H", "Connection: Upgrade", "-H", "Upgrade: corral-terminal.v1", url + term + "/terminal"}).out.find("\n404"),
            std::string::npos);
  // Control: the owner's write and close work, and cat ends with the owner's bytes only.
  EXPECT_NE(as(std::nullopt, {"-X", "POST", "--data-binary", "owner", url + in + "/stdin"}).out.find("\n200"), std::string::npos);
  EXPECT_NE(as(std::nullopt, {"-X", "DELETE", url + in + "/stdin"}).out.find("\n200"), std::string::npos);
  auto [text, code] = outputOf(d, in);
  EXPECT_EQ(text, "owner");
  EXPECT_EQ(code, 0);
  EXPECT_EQ(d.curl("POST", term + "/signal", R"({"signal":9})").status, 200);
}

}  // namespace
}  // namespace corral::testing
