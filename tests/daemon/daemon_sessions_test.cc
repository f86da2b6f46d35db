// SPDX-License-Identifier: Apache-2.0
// Sessions end to end through the CLI: create, exec with exec's exit-code contract, a shared
// workspace and background processes between commands, ls/show/rm, detach and the API's view.
#include <signal.h>
#include <sys/stat.h>

#include <fstream>

#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

// Alive and not a zombie (pid 1 of this host may reap late).
bool running(pid_t pid) {
  const std::string stat = readHostFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

class DaemonSessions : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(d.start()) << "the daemon did not start: " << d.stderrText();
    id = d.createSession();
    ASSERT_FALSE(id.empty());
  }
  RunResult exec(const std::vector<std::string>& cmd, std::vector<std::string> opts = {}) {
    std::vector<std::string> args = {"session", "exec", id};
    args.insert(args.end(), opts.begin(), opts.end());
    args.push_back("--");
    args.insert(args.end(), cmd.begin(), cmd.end());
    return d.cli(args);
  }
  Daemon d;
  std::string id;
};

TEST_F(DaemonSessions, ExecStreamsOutputAndKeepsExecsExitCodes) {
  RunResult r = exec({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.describe();
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(exec({"sh", "-c", "kill -TERM $$"}).exit_code, 128 + SIGTERM);
  EXPECT_EQ(exec({"sleep", "100"}, {"--timeout", "200ms"}).exit_code, 124);
  RunResult nf = exec({"no-such-command-here"});
  EXPECT_EQ(nf.exit_code, 127) << nf.describe();
  EXPECT_NE(nf.err.find("No such file"), std::string::npos) << nf.err;
}

TEST_F(DaemonSessions, CommandsShareTheWorkspaceAndBackgroundProcesses) {
  ASSERT_EQ(exec({"sh", "-c", "echo kept > /workspace/f && mkdir -p /workspace/sub"}).exit_code, 0);
  RunResult r = exec({"cat", "f"});
  EXPECT_EQ(r.out, "kept\n") << r.describe();
  EXPECT_EQ(exec({"pwd"}, {"--cwd", "sub"}).out, "/workspace/sub\n");
  // A background process outlives the command that started it, but not the session.
  RunResult bg = exec({"sh", "-c", "sleep 1000 >/dev/null 2>&1 & echo $!"});
  ASSERT_EQ(bg.exit_code, 0) << bg.describe();
  std::string pid = bg.out.substr(0, bg.out.find('\n'));
  // Seen, not signalled: each command is its own Landlock domain, and with signal scoping
  // (ABI 6) one command cannot signal another's processes.
  EXPECT_EQ(exec({"test", "-d", "/proc/" + pid}).exit_code, 0) << "the background process is gone";
  EXPECT_EQ(exec({"sh", "-c", "echo $FOO"}, {"--env", "FOO=bar"}).out, "bar\n");
}

TEST_F(DaemonSessions, EachCommandIsConfinedLikeExec) {
  RunResult r = exec({"sh", "-c", "id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("1000\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CapEff:\t0000000000000000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NoNewPrivs:\t1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Seccomp:\t2"), std::string::npos) << r.out;
  // Its own pid namespace: init is 1 and nothing of the host is listed.
  RunResult ps = exec({"sh", "-c", "ls /proc | grep -E '^[0-9]+$' | sort -n | head -1"});
  EXPECT_EQ(ps.out, "1\n") << ps.describe();
}

TEST_F(DaemonSessions, LsShowAndRmLeaveNothingBehind) {
  ASSERT_EQ(exec({"true"}).exit_code, 0);
  RunResult ls = d.cli({"session", "ls"});
  EXPECT_NE(ls.out.find(id), std::string::npos) << ls.describe();
  RunResult show = d.cli({"session", "show", id});
  ASSERT_EQ(show.exit_code, 0) << show.describe();
  auto j = nlohmann::json::parse(show.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << show.out;
  EXPECT_EQ(j["state"], "running");
  ASSERT_EQ(j["commands"].size(), 1u);
  EXPECT_EQ(j["commands"][0]["exit_code"], 0);
  const std::vector<pid_t> shims = shimProcesses(d.stateDir());
  ASSERT_EQ(shims.size(), 1u);
  RunResult rm = d.cli({"session", "rm", id});
  ASSERT_EQ(rm.exit_code, 0) << rm.describe();
  EXPECT_TRUE(shimProcesses(d.stateDir()).empty()) << "the shim outlived rm";
  EXPECT_FALSE(running(shims[0])) << "the shim outlived rm";
  struct stat st;
  EXPECT_NE(::stat((d.stateDir() + "/sessions/" + id).c_str(), &st), 0) << "the session directory outlived rm";
  EXPECT_EQ(d.cli({"session", "show", id}).exit_code, 125);
  EXPECT_EQ(d.curl("GET", "/v1/sessions/" + id).status, 404);
}

TEST_F(DaemonSessions, DetachedCommandsAreFollowedThroughTheApi) {
  RunResult r = exec({"sh", "-c", "echo later; exit 5"}, {"--detach"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::string n = r.out.substr(0, r.out.find('\n'));
  auto out = d.curl("GET", "/v1/sessions/" + id + "/commands/" + n + "/output");
  EXPECT_EQ(out.status, 200);
  EXPECT_NE(out.body.find("\"exit\""), std::string::npos) << out.body;
  auto cmd = d.curl("GET", "/v1/sessions/" + id + "/commands/" + n);
  EXPECT_EQ(cmd.json()["exit_code"], 5) << cmd.body;
  EXPECT_EQ(cmd.json()["state"], "exited") << cmd.body;
}

TEST_F(DaemonSessions, BadCommandRequestsAreRefusedAndChangeNothing) {
  auto h = d.curl("POST", "/v1/sessions/" + id + "/commands", "{\"argv\":[]}");
  EXPECT_EQ(h.status, 400) << h.body;
  h = d.curl("POST", "/v1/sessions/" + id + "/commands", "{\"argv\":[\"true\"],\"cwd\":\"../etc\"}");
  EXPECT_EQ(h.status, 400) << h.body;
  h = d.curl("POST", "/v1/sessions/" + id + "/commands", "{\"argv\":[\"true\"],\"argx\":1}");
  EXPECT_EQ(h.status, 400) << h.body;
  auto show = d.curl("GET", "/v1/sessions/" + id);
  EXPECT_EQ(show.json()["commands"].size(), 0u) << show.body;
}

}  // namespace
}  // namespace corral::testing
