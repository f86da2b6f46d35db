// SPDX-License-Identifier: Apache-2.0
// Re-attaching a session terminal (docs/api.md, Terminals: re-attaching; claims/daemon.toml:
// daemon.terminal-reattach, daemon.terminal-one-client, daemon.terminal-bounded): a dropped
// connection leaves the command running with a bounded scrollback, a new upgrade gets it back,
// one client at a time. Driven by tests/daemon/terminal_reattach.py (raw frames; the CLI on a pty).
#include <sys/stat.h>

#include <cstdio>
#include <optional>

#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

using nlohmann::json;

class ReattachSuite : public SharedSessionSuite {
 protected:
  static json client(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/python3", CORRAL_SOURCE_DIR "/tests/daemon/terminal_reattach.py", d_->socket(), id_};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions o;
    o.env_extra = {"CORRAL_SOCKET=" + d_->socket()};
    RunResult r = run(argv, o);
    const std::string last = r.out.empty() ? "" : r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
    json j = json::parse(last.empty() ? "null" : last, nullptr, false);
    if (!j.is_object()) ADD_FAILURE() << r.describe() << d_->stderrText();
    return j;
  }
};
class DaemonTerminalReattach : public ReattachSuite {};
class DaemonTerminalOneClient : public ReattachSuite {};

// ---- daemon.terminal-reattach ----

TEST_F(DaemonTerminalReattach, ADroppedConnectionLeavesTheShellAliveAndAReattachGetsWhatItWroteMeanwhile) {
  json j = client({"shell"});
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["state_detached"]["state"], "detached") << j;
  EXPECT_NE(j["replayed"].get<std::string>().find("written-while-42-detached"), std::string::npos)
      << "daemon.terminal-reattach broken: the re-attach did not get what the shell wrote while detached: " << j;
  EXPECT_EQ(j["scrollback"]["dropped_bytes"], 0) << j;
  EXPECT_EQ(j["scrollback"]["scrollback_bytes"], j["replayed"].get<std::string>().size()) << j;
  EXPECT_EQ(j["pid1"], j["pid2"]) << "the shell after the re-attach is another process: " << j;
  EXPECT_EQ(j["size"], "40 120") << "a resize after the re-attach did not reach the terminal: " << j;
  ASSERT_TRUE(j["exit"].is_object()) << j;
  EXPECT_EQ(j["exit"]["exit_code"], 3) << j;
}

TEST_F(DaemonTerminalReattach, ACommandThatEndedWhileDetachedGivesItsScrollbackThenItsExit) {
  json j = client({"exited"});
  ASSERT_TRUE(j.is_object());
  EXPECT_NE(j["replayed"].get<std::string>().find("ended-while-detached-7"), std::string::npos) << j;
  ASSERT_TRUE(j["exit"].is_object()) << j;
  EXPECT_EQ(j["exit"]["exit_code"], 9) << j;
  // Once its report was delivered, nothing is kept: the route says it ended.
  EXPECT_EQ(j["after_status"], 409) << j;
  EXPECT_NE(j["after"].dump().find("has ended"), std::string::npos) << j;
}

TEST_F(DaemonTerminalReattach, SessionAttachCommandReattachesThroughTheCliAndShowListsTheDetachedTerminal) {
  json j = client({"cli", corralBin()});
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["pid1"], j["pid2"]) << j;
  EXPECT_EQ(j["status"], 4) << "attach --command's exit status is not the shell's: " << j;
  ASSERT_EQ(j["listed"].size(), 1u) << "session show --json does not list the detached terminal: " << j;
  EXPECT_EQ(j["listed"][0]["state"], "detached") << j;
}

// ---- daemon.terminal-one-client ----

TEST_F(DaemonTerminalOneClient, ASecondConcurrentAttachIsRefusedAndTheFirstKeepsWorking) {
  json j = client({"shell"});
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["second_status"], 409) << "daemon.terminal-one-client broken: a second client attached: " << j;
  EXPECT_EQ(j["second"]["error"]["code"], "conflict") << j;
  EXPECT_EQ(j["first_alive"], true) << "the refused attach disturbed the first client: " << j;
  EXPECT_EQ(j["control"], true) << "control: once the first client left, an attach should succeed: " << j;
}

TEST(DaemonTerminalOneClientUid, RootAnotherUidCannotAttachOrReattachToTheTerminal) {
  CORRAL_REQUIRE_ROOT("the test connects as uid 65534 to a root daemon");
  Daemon d({"--allow-group", "nogroup"});
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(::chmod(d.stateDir().c_str(), 0755), 0);
  auto started = d.curl("POST", "/v1/sessions/" + id + "/commands", R"({"argv":["sleep","30"],"tty":{"rows":24,"cols":80}})");
  ASSERT_EQ(started.status, 201) << started.body;
  const std::string base = "/v1/sessions/" + id + "/commands/" + std::to_string(started.json()["id"].get<int>());
  auto as = [&](std::optional<uid_t> uid) {
    RunOptions o;
    o.as_user = uid;
    return run({"/usr/bin/curl", "-sS", "--unix-socket", d.socket(), "-o", "-", "-w", "\n%{http_code}", "--max-time", "5", "-H",
                "Connection: Upgrade", "-H", "Upgrade: corral-terminal.v1", "http://corral" + base + "/terminal"},
               o);
  };
  RunResult nobody = as(kNobody);
  EXPECT_NE(nobody.out.find("\n404"), std::string::npos) << "uid 65534 reached root's terminal: " << nobody.describe();
  // Control: the owner gets the upgrade (curl then reads frames until --max-time).
  RunResult root = as(std::nullopt);
  EXPECT_NE(root.out.find("\n101"), std::string::npos) << root.describe();
  EXPECT_EQ(d.curl("POST", base + "/signal", R"({"signal":9})").status, 200);
}

// ---- daemon.terminal-bounded (detached) ----

TEST(DaemonTerminalReattachBounded, ADetachedCommandThatWritesWithoutEndDoesNotGrowTheDaemon) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty()) << d.stderrText();
  RunResult r = run({"/usr/bin/python3", CORRAL_SOURCE_DIR "/tests/daemon/terminal_reattach.py", d.socket(), id, "flood",
                     std::to_string(d.pid()), "4"});
  const std::string last = r.out.empty() ? "" : r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  json j = json::parse(last.empty() ? "null" : last, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.describe() << d.stderrText();
  std::printf("detached flood: %s\n", j.dump().c_str());  // the measurement, for docs and notes
  constexpr long kBoundKiB = 8 * 1024;
  EXPECT_LT(j["rss_peak"].get<long>() - j["rss_before"].get<long>(), kBoundKiB)
      << "daemon.terminal-bounded broken: the daemon grew while a detached terminal was flooded: " << j;
  // The ring is full and its overflow counted, never kept.
  EXPECT_EQ(j["scrollback"]["scrollback_bytes"], 64 * 1024) << j;
  EXPECT_EQ(j["data_len"], 64 * 1024) << j;
  // Control: `yes` wrote far more than the bound while detached, so holding it would have shown.
  EXPECT_GT(j["dropped"].get<double>(), 2.0 * kBoundKiB * 1024) << "control: the detached command wrote too little: " << j;
  EXPECT_EQ(d.curl("GET", "/v1/health").status, 200);
}

}  // namespace
}  // namespace corral::testing
