// SPDX-License-Identifier: Apache-2.0
// Commands' stdin (docs/api.md, Commands): `corral session exec` forwards its own stdin when it
// is neither a terminal nor /dev/null, `--detach` gives none; through the API a command started
// with "stdin": true is fed by POST .../stdin (streamed, kept open) and ended by DELETE; a
// command that reads none of it stalls the writer instead of the daemon's memory
// (claims/daemon.toml: daemon.stdin-bounded).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

class DaemonStdin : public SharedSessionSuite {
 protected:
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
};

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

// A producer that pauses longer than the daemon's 60 s read timeout: the CLI ends its request
// after 20 s without input and starts another, so nothing is lost and end of file still comes.
// The pause is the thing tested (a wall-clock gap in the input), not a synchronisation.
TEST_F(DaemonStdin, ExecForwardsAStdinThatPausesLongerThanTheDaemonsReadTimeout) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  RunOptions o;
  o.stdin_fd = p[0];
  o.env_extra = {"CORRAL_SOCKET=" + d_->socket()};
  o.deadline = std::chrono::seconds(150);
  Process cli = Process::start({corralBin(), "session", "exec", id_, "--", "cat"}, o);
  ::close(p[0]);
  ASSERT_EQ(::write(p[1], "before\n", 7), 7);
  EXPECT_EQ(cli.readLine(std::chrono::seconds(30)).value_or("(none)"), "before") << "the first line was not streamed";
  std::this_thread::sleep_for(std::chrono::seconds(61));
  ASSERT_EQ(::write(p[1], "after\n", 6), 6);
  ::close(p[1]);
  const RunResult r = cli.wait();  // (not readLine: the last line comes with the exit)
  EXPECT_EQ(r.out, "before\nafter\n") << "input after the pause was lost: " << r.describe();
  EXPECT_EQ(r.exit_code, 0) << "cat saw no end of file after the pause: " << r.describe();
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
                          R"({"argv":["sh","-c","read a; read b; n=$(cat | wc -c); echo $a-$b-$n"],"stdin":true})");
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
  // "one-two-5\n" (one write: one frame) in base64: the command read both writes, then end of file.
  EXPECT_NE(out.body.find("b25lLXR3by01Cg=="), std::string::npos) << out.body;
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
  // More than a pipe holds, less than one argument to curl may be (MAX_ARG_STRLEN, 128 KiB).
  auto late = d_->curl("POST", base + "/stdin", std::string(100000, 'x'));
  EXPECT_EQ(late.status, 409) << late.body;
  EXPECT_EQ(d_->curl("GET", "/v1/health").status, 200);
}

// ---- daemon.stdin-bounded ----

// One chunked POST .../stdin on a raw connection, written as fast as the daemon's side takes it.
class StdinFlood {
 public:
  StdinFlood(const std::string& socket_path, const std::string& target) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, socket_path.c_str(), sizeof a.sun_path - 1);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return;
    pending_ = "POST " + target + " HTTP/1.1\r\nHost: corral\r\nContent-Type: application/octet-stream\r\n" +
               "Transfer-Encoding: chunked\r\n\r\n";
    head_bytes_ = pending_.size();
    chunk_ = "10000\r\n" + std::string(65536, 's') + "\r\n";
  }
  ~StdinFlood() {
    if (fd_ >= 0) ::close(fd_);
  }
  StdinFlood(const StdinFlood&) = delete;
  StdinFlood& operator=(const StdinFlood&) = delete;
  bool connected() const { return !pending_.empty(); }
  // Sends for `window`, sampling pid's VmRSS every 100 ms: body bytes the kernel took, the
  // seconds since the last of them went, and the peak VmRSS seen.
  struct Stats {
    uint64_t sent = 0;
    double idle_s = 0;
    long peak_rss_kib = 0;
  };
  Stats sendFor(std::chrono::milliseconds window, pid_t pid) {
    using Clock = std::chrono::steady_clock;
    Stats st;
    const auto start = Clock::now(), until = start + window;
    auto last_progress = start, next_sample = start;
    uint64_t wire = 0;
    while (Clock::now() < until) {
      if (Clock::now() >= next_sample) {
        st.peak_rss_kib = std::max(st.peak_rss_kib, rssKiB(pid));
        next_sample += std::chrono::milliseconds(100);
      }
      if (pending_.size() < chunk_.size()) pending_ += chunk_;
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const ssize_t n = ::send(fd_, pending_.data(), pending_.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EINTR) break;
      if (n <= 0) continue;
      pending_.erase(0, static_cast<size_t>(n));
      wire += static_cast<uint64_t>(n);
      last_progress = Clock::now();
    }
    st.sent = wire > head_bytes_ ? wire - head_bytes_ : 0;
    st.idle_s = std::chrono::duration<double>(Clock::now() - last_progress).count();
    return st;
  }
  // Ends the body (half-closes the connection) and reads the answer's status, 0 if none.
  int status() {
    ::shutdown(fd_, SHUT_WR);
    std::string got;
    char buf[4096];
    while (got.find("\r\n") == std::string::npos) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 30'000) <= 0) return 0;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return 0;
      got.append(buf, static_cast<size_t>(n));
    }
    return got.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(got.c_str() + 9) : 0;
  }

 private:
  int fd_ = -1;
  std::string pending_, chunk_;
  size_t head_bytes_ = 0;
};

TEST(DaemonStdinBounded, ACommandThatReadsNoStdinStallsTheWriterNotTheDaemonsMemory) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty()) << d.stderrText();
  const auto startCommand = [&](const std::string& argv) {
    auto started = d.curl("POST", "/v1/sessions/" + id + "/commands", R"({"argv":)" + argv + R"(,"stdin":true})");
    EXPECT_EQ(started.status, 201) << started.body;
    return "/v1/sessions/" + id + "/commands/" + std::to_string(started.json().value("id", 0));
  };
  constexpr auto kWindow = std::chrono::seconds(3);
  constexpr uint64_t kBoundBytes = uint64_t{4} << 20;
  constexpr long kRssBoundKiB = 8 * 1024;

  // The command never reads its stdin: once the pipe, the daemon's one piece and the socket
  // buffers are full, the writer gets nowhere, and the daemon does not hold the rest.
  const std::string idle = startCommand(R"(["sleep","120"])");
  StdinFlood stalled(d.socket(), idle + "/stdin");
  ASSERT_TRUE(stalled.connected());
  const long rss_before = rssKiB(d.pid());
  const StdinFlood::Stats st = stalled.sendFor(kWindow, d.pid());
  std::printf("stalled writer: %llu bytes taken, idle for the last %.2f s, daemon VmRSS %ld -> %ld KiB\n",
              static_cast<unsigned long long>(st.sent), st.idle_s, rss_before, st.peak_rss_kib);
  EXPECT_LT(st.sent, kBoundBytes) << "daemon.stdin-bounded broken: a command that reads nothing took this much of its stdin";
  EXPECT_GT(st.idle_s, 1.0) << "daemon.stdin-bounded broken: the writer was still getting bytes through at the end";
  EXPECT_LT(st.peak_rss_kib - rss_before, kRssBoundKiB) << "daemon.stdin-bounded broken: the daemon grew while the writer was stalled";
  // The command's end releases the stalled writer: 409, and the daemon serves on.
  EXPECT_EQ(d.curl("POST", idle + "/signal", R"({"signal":9})").status, 200);
  EXPECT_EQ(stalled.status(), 409) << "the stalled stdin request was not refused once its command was gone";

  // Control: the same writer against a command that reads everything gets far past the bound
  // in the same time, so staying under it above is the stall, not a slow writer.
  const std::string reader = startCommand(R"(["sh","-c","cat >/dev/null"])");
  StdinFlood flowing(d.socket(), reader + "/stdin");
  ASSERT_TRUE(flowing.connected());
  const StdinFlood::Stats ctl = flowing.sendFor(kWindow, d.pid());
  std::printf("control writer: %llu bytes taken\n", static_cast<unsigned long long>(ctl.sent));
  EXPECT_GT(ctl.sent, 4 * kBoundBytes) << "control: a reading command took too little for the bound to mean anything";
  EXPECT_EQ(d.curl("POST", reader + "/signal", R"({"signal":9})").status, 200);
  EXPECT_EQ(d.curl("GET", "/v1/health").status, 200) << d.stderrText();
}

}  // namespace
}  // namespace corral::testing
