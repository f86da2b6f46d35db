// SPDX-License-Identifier: Apache-2.0
// A detached terminal's scrollback survives a daemon killed with kill -9 (docs/daemon.md,
// Surviving a restart): the old daemon's ring is mirrored to cmds/N/terminal.ring, which the
// first attach after the restart takes. Real daemon, real ptys, raw frames from
// terminal_reattach.py; the control removes the file before the restart and the scrollback is gone.
// claims/daemon.toml: daemon.terminal-reattach, daemon.terminal-bounded.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class DaemonTerminalRestartScrollback : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(d_.start()) << d_.stderrText();
    id_ = d_.createSession();
    ASSERT_FALSE(id_.empty()) << d_.stderrText();
  }
  std::string ring(int64_t n) const { return d_.stateDir() + "/sessions/" + id_ + "/cmds/" + std::to_string(n) + "/terminal.ring"; }
  // terminal_reattach.py MODE: on its "KILL N..." line the daemon is killed, between(commands)
  // runs with no daemon, /workspace/go-down is made, the daemon starts again.
  json script(const std::vector<std::string>& mode, const std::function<void(const std::vector<int64_t>&)>& between = {}) {
    RunOptions o;
    o.env_extra = {"CORRAL_SOCKET=" + d_.socket()};
    o.stdin_pipe = true;
    o.deadline = 240'000ms;
    std::vector<std::string> argv = {"/usr/bin/python3", CORRAL_SOURCE_DIR "/tests/daemon/terminal_reattach.py", d_.socket(), id_};
    argv.insert(argv.end(), mode.begin(), mode.end());
    Process p = Process::start(argv, o);
    auto line = p.readLine(180'000ms);
    if (!line || line->rfind("KILL ", 0) != 0) {
      ADD_FAILURE() << "no KILL line: " << p.wait().describe() << d_.stderrText();
      return nullptr;
    }
    std::vector<int64_t> cmds;
    std::istringstream words(line->substr(5));
    for (int64_t n; words >> n;) cmds.push_back(n);
    const pid_t old = d_.pid();
    d_.kill9();
    if (between) between(cmds);
    // What the shells write now, no daemon reads: it waits in their ptys.
    const std::string go = d_.stateDir() + "/sessions/" + id_ + "/workspace/go-down";
    const int made = ::open(go.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    EXPECT_GE(made, 0) << go;
    if (made >= 0) ::close(made);
    std::this_thread::sleep_for(1500ms);
    EXPECT_TRUE(d_.start()) << d_.stderrText();
    EXPECT_NE(d_.pid(), old);
    p.closeStdin();
    RunResult r = p.wait();
    const std::string last = r.out.empty() ? "" : r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
    json j = json::parse(last.empty() ? "null" : last, nullptr, false);
    if (!j.is_object()) ADD_FAILURE() << r.describe() << d_.stderrText();
    // Scrollback is command output: never in the daemon's log (sizes and ids only).
    for (const char* sentinel : {"before-the-42", "no-daemon", "flood-0"})
      EXPECT_EQ(d_.stderrText().find(sentinel), std::string::npos) << "terminal output in the daemon's log: " << sentinel;
    return j;
  }
  Daemon d_;
  std::string id_;
};

// The file a detached terminal's ring lives in: 0600, a fixed size, in the session's 0700 directory.
void expectPrivateBoundedRing(const std::string& path, const std::string& session_dir) {
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0) << "no ring file for a detached terminal: " << path;
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_size, 64 + 65536) << "the ring file is not its fixed size";
  EXPECT_LE(st.st_blocks * 512, 2 * (64 + 65536)) << "the ring file takes more disk than its size";
  ASSERT_EQ(::stat(session_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST_F(DaemonTerminalRestartScrollback, WhatTheOldDaemonHadReadComesFirstAfterAKill9) {
  json j = script({"restart-scrollback"}, [&](const std::vector<int64_t>& n) {
    ASSERT_EQ(n.size(), 1u);
    expectPrivateBoundedRing(ring(n[0]), d_.stateDir() + "/sessions/" + id_);
  });
  ASSERT_TRUE(j.is_object());
  ASSERT_TRUE(j["scrollback"].is_object()) << "no scrollback frame after the restart: " << j;
  EXPECT_NE(j["replayed"].get<std::string>().find("before-the-42-kill-0\r\n"), std::string::npos)
      << "what the old daemon had read of the detached terminal was lost with it: " << j;
  EXPECT_EQ(j["replayed"].get<std::string>().find("no-daemon"), std::string::npos) << j;
  EXPECT_EQ(j["scrollback"]["scrollback_bytes"], j["replayed"].get<std::string>().size()) << j;
  EXPECT_EQ(j["live_before"], false) << "the saved scrollback was shown twice: " << j;
  EXPECT_EQ(j["seen"], "written-while-42-no-daemon") << "what the shell wrote while no daemon ran was lost: " << j;
  EXPECT_EQ(j["exit"]["exit_code"], 5) << j;
  EXPECT_NE(d_.stderrText().find("terminal_ring_loaded"), std::string::npos);
  // Taken by the attach: a second restart shows it no more.
  EXPECT_FALSE(fileExists(ring(j["n"].get<int64_t>()))) << "the ring file outlived its re-attach";
}

TEST_F(DaemonTerminalRestartScrollback, ControlItsRingFileRemovedBeforeTheRestartTheScrollbackIsGone) {
  json j = script({"restart-scrollback"}, [&](const std::vector<int64_t>& n) {
    ASSERT_EQ(n.size(), 1u);
    ASSERT_EQ(::unlink(ring(n[0]).c_str()), 0);
  });
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j["scrollback"].is_null()) << j;
  EXPECT_EQ(j["replayed"].get<std::string>().find("before-the-42-kill"), std::string::npos) << j;
  EXPECT_EQ(j["live_before"], false) << "the line the old daemon had read came from elsewhere than its ring file: " << j;
  EXPECT_EQ(j["seen"], "written-while-42-no-daemon") << j;
  EXPECT_EQ(j["exit"]["exit_code"], 5) << j;
}

TEST_F(DaemonTerminalRestartScrollback, TheRingFileStaysBoundedAndHoldsTheNewestBytesOfAFlood) {
  json j = script({"restart-flood"}, [&](const std::vector<int64_t>& n) {
    ASSERT_EQ(n.size(), 1u);
    expectPrivateBoundedRing(ring(n[0]), d_.stateDir() + "/sessions/" + id_);
  });
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["info_before"]["scrollback_bytes"], 65536) << j;
  ASSERT_TRUE(j["scrollback"].is_object()) << j;
  EXPECT_EQ(j["scrollback"]["scrollback_bytes"], 65536) << j;
  EXPECT_EQ(j["scrollback"]["dropped_bytes"], j["expected_len"].get<int64_t>() - 65536) << j;
  EXPECT_EQ(j["exact"], true) << "the saved scrollback is not the flood's last 64 KiB in order: " << j;
  // The flood ended while no daemon ran: its saved scrollback came with its report.
  ASSERT_TRUE(j["exit"].is_object()) << j;
  EXPECT_EQ(j["exit"]["exit_code"], 0) << j;
}

TEST_F(DaemonTerminalRestartScrollback, HostileRingFilesAreRefusedForTheirTerminalOnly) {
  const std::string sentinel = d_.stateDir() + "/precious";
  const std::vector<std::pair<std::string, std::function<void(const std::string&)>>> spoil = {
      {"bytes, not", [](const std::string& p) { ASSERT_EQ(::truncate(p.c_str(), 100), 0); }},
      {"bytes, not", [](const std::string& p) { ASSERT_EQ(::truncate(p.c_str(), 64 << 20), 0); }},
      {"not a terminal ring", [](const std::string& p) {
         const int fd = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
         ASSERT_GE(fd, 0);
         EXPECT_EQ(::pwrite(fd, "garbage!", 8, 0), 8);
         ::close(fd);
       }},
      // A link to a valid ring elsewhere (with another terminal's bytes): never followed.
      {"symbolic link", [&](const std::string& p) {
         ASSERT_EQ(::rename(p.c_str(), sentinel.c_str()), 0);
         ASSERT_EQ(::symlink(sentinel.c_str(), p.c_str()), 0);
       }},
      {"not a regular file", [](const std::string& p) {
         ASSERT_EQ(::unlink(p.c_str()), 0);
         ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);  // an open that blocked would hang the daemon
       }},
  };
  json j = script({"restart-hostile", std::to_string(spoil.size())}, [&](const std::vector<int64_t>& n) {
    ASSERT_EQ(n.size(), spoil.size() + 1);
    for (size_t i = 0; i < spoil.size(); ++i) spoil[i].second(ring(n[i]));
  });
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j["terms"].size(), spoil.size() + 1) << j;
  for (size_t i = 0; i < spoil.size(); ++i) {
    const json& t = j["terms"][i];
    EXPECT_EQ(t["first_status"], 409) << "a spoilt ring file (" << spoil[i].first << ") was not refused: " << t;
    EXPECT_NE(t["first"].dump().find(spoil[i].first), std::string::npos) << t;
    EXPECT_NE(t["first"].dump().find("saved scrollback"), std::string::npos) << t;
    EXPECT_TRUE(t["scrollback"].is_null()) << "the next attach showed a refused file: " << t;
    EXPECT_EQ(t["replayed"].get<std::string>().find("before-the-42"), std::string::npos) << t;
    EXPECT_EQ(t["alive"], true) << t;
    EXPECT_EQ(t["exit"]["exit_code"], 5) << t;
    EXPECT_FALSE(fileExists(ring(t["n"].get<int64_t>()))) << "a refused ring file was kept";
  }
  // Control: the unspoilt terminal of the same session and restart got its scrollback.
  const json& good = j["terms"][spoil.size()];
  EXPECT_EQ(good["first_status"], 101) << good;
  EXPECT_NE(good["replayed"].get<std::string>().find("before-the-42-kill-" + std::to_string(spoil.size())), std::string::npos) << good;
  EXPECT_EQ(good["exit"]["exit_code"], 5) << good;
  // The link's target was neither read nor removed; the daemon logged each refusal once.
  EXPECT_TRUE(fileExists(sentinel)) << "the daemon removed a symbolic link's target";
  size_t refused = 0;
  for (size_t at = 0; (at = d_.stderrText().find("terminal_ring_refused", at)) != std::string::npos; ++at) ++refused;
  EXPECT_EQ(refused, spoil.size()) << d_.stderrText();
  EXPECT_EQ(d_.curl("GET", "/v1/health").status, 200);
}

}  // namespace
}  // namespace corral::testing
