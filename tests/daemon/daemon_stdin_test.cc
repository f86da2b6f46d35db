// SPDX-License-Identifier: Apache-2.0
// Commands' stdin (docs/api.md, Commands): `corral session exec` forwards its own stdin when it
// is neither a terminal nor /dev/null, `--detach` gives none; through the API a command started
// with "stdin": true is fed by POST .../stdin (streamed, kept open) and ended by DELETE.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

class DaemonStdin : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    d_ = new Daemon();
    if (d_->start()) id_ = d_->createSession();
  }
  static void TearDownTestSuite() {
    delete d_;
    d_ = nullptr;
  }
  void SetUp() override { ASSERT_FALSE(id_.empty()) << "no session: " << d_->stderrText(); }
  // `corral session exec` with stdin read from a file holding text.
  static RunResult execWithInput(const std::string& text, const std::vector<std::string>& cmd,
                                 const std::vector<std::string>& opts = {}) {
    TempDir dir("stdin");
    const std::string path = dir / "in";
    std::ofstream(path, std::ios::binary) << text;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    RunOptions o;
    o.stdin_fd = fd;
    std::vector<std::string> args = {"session", "exec", id_};
    args.insert(args.end(), opts.begin(), opts.end());
    args.push_back("--");
    args.insert(args.end(), cmd.begin(), cmd.end());
    RunResult r = d_->cli(args, o);
    ::close(fd);
    return r;
  }
  static std::string commandPath(const Daemon::Http& started) {
    return "/v1/sessions/" + id_ + "/commands/" + std::to_string(started.json()["id"].get<int>());
  }
  static Daemon* d_;
  static std::string id_;
};
Daemon* DaemonStdin::d_ = nullptr;
std::string DaemonStdin::id_;

TEST_F(DaemonStdin, ExecForwardsItsOwnStdin) {
  RunResult r = execWithInput("hi\n", {"cat"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "hi\n") << r.describe();
  // More than any pipe holds: it is streamed, the command's reads pacing it.
  RunResult big = execWithInput(std::string(5u << 20, 'z'), {"wc", "-c"});
  EXPECT_EQ(big.exit_code, 0) << big.describe();
  EXPECT_EQ(big.out, "5242880\n") << big.describe();
}

TEST_F(DaemonStdin, ACommandThatStopsReadingEndsNormally) {
  RunResult r = execWithInput(std::string(8u << 20, 'y'), {"head", "-c", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "yyy") << r.describe();
}

TEST_F(DaemonStdin, DevNullAndDetachGiveTheCommandNoInput) {
  RunResult r = d_->cli({"session", "exec", id_, "--", "cat"});  // the harness's stdin: /dev/null
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "");
  RunResult det = execWithInput("not-for-it\n", {"sh", "-c", "cat; echo done"}, {"--detach"});
  ASSERT_EQ(det.exit_code, 0) << det.describe();
  const std::string n = det.out.substr(0, det.out.find('\n'));
  auto out = d_->curl("GET", "/v1/sessions/" + id_ + "/commands/" + n + "/output");
  EXPECT_EQ(out.body.find("not-for-it"), std::string::npos) << out.body;
  EXPECT_NE(out.body.find("\"exit_code\":0"), std::string::npos) << out.body;
}

TEST_F(DaemonStdin, ApiWritesStayOpenUntilDeleted) {
  auto started = d_->curl("POST", "/v1/sessions/" + id_ + "/commands",
                          R"({"argv":["sh","-c","read a; read b; echo $a-$b; cat | wc -c"],"stdin":true})");
  ASSERT_EQ(started.status, 201) << started.body;
  EXPECT_EQ(started.json()["stdin"], true) << started.body;
  const std::string base = commandPath(started);
  auto one = d_->curl("POST", base + "/stdin", "one\n");
  EXPECT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.json()["bytes"], 4) << one.body;
  EXPECT_EQ(one.json()["stdin"], "open") << one.body;
  EXPECT_EQ(d_->curl("POST", base + "/stdin", "two\n12345").status, 200);
  auto closed = d_->curl("DELETE", base + "/stdin");
  EXPECT_EQ(closed.status, 200) << closed.body;
  EXPECT_EQ(closed.json()["stdin"], "closed") << closed.body;
  auto out = d_->curl("GET", base + "/output");
  EXPECT_NE(out.body.find("\"exit_code\":0"), std::string::npos) << out.body;
  // "one-two\n5\n" in base64 frames: the command read both writes, then end of file.
  EXPECT_NE(out.body.find("b25lLXR3bwo1Cg=="), std::string::npos) << out.body;
  // Closed: neither another write nor another close.
  EXPECT_EQ(d_->curl("POST", base + "/stdin", "late").status, 409);
  EXPECT_EQ(d_->curl("DELETE", base + "/stdin").status, 409);
}

TEST_F(DaemonStdin, StdinOnlyForCommandsThatAskedAndForTheirOwner) {
  auto plain = d_->curl("POST", "/v1/sessions/" + id_ + "/commands", R"({"argv":["sleep","30"]})");
  ASSERT_EQ(plain.status, 201) << plain.body;
  const std::string base = commandPath(plain);
  auto refused = d_->curl("POST", base + "/stdin", "x");
  EXPECT_EQ(refused.status, 409) << refused.body;
  EXPECT_EQ(refused.json()["error"]["code"], "conflict") << refused.body;
  EXPECT_EQ(d_->curl("POST", "/v1/sessions/" + id_ + "/commands/999999/stdin", "x").status, 404);
  EXPECT_EQ(d_->curl("POST", "/v1/sessions/nosuchsession/commands/1/stdin", "x").status, 404);
  EXPECT_EQ(d_->curl("PUT", base + "/stdin", "x").status, 405);
  EXPECT_EQ(d_->curl("POST", "/v1/sessions/" + id_ + "/commands", R"({"argv":["true"],"stdin":"yes"})").status, 400);
  EXPECT_EQ(d_->curl("POST", base + "/signal", R"({"signal":9})").status, 200);
}

// A writer whose command has exited gets a conflict, not a hang or a dead daemon.
TEST_F(DaemonStdin, WritingToAnEndedCommandIsAConflict) {
  auto started = d_->curl("POST", "/v1/sessions/" + id_ + "/commands", R"({"argv":["true"],"stdin":true})");
  ASSERT_EQ(started.status, 201) << started.body;
  const std::string base = commandPath(started);
  ASSERT_TRUE(eventually([&] { return d_->curl("GET", base).json()["state"] == "exited"; }));
  auto late = d_->curl("POST", base + "/stdin", std::string(200000, 'x'));
  EXPECT_EQ(late.status, 409) << late.body;
  EXPECT_EQ(d_->curl("GET", "/v1/health").status, 200);
}

}  // namespace
}  // namespace corral::testing
