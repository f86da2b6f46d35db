// SPDX-License-Identifier: Apache-2.0
// RunEgress: events made on the proxy thread reach the run's trace through flush(), which
// the run thread calls while the proxy is still serving (the pair `make test-tsan` checks).
#include "agent/run_egress.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "base/fd_passing.h"
#include "audit/trace.h"

namespace corral::agent {
namespace {

namespace fs = std::filesystem;

struct Dir {
  std::string path;
  Dir() {
    char t[] = "/tmp/corral-run-egress-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~Dir() { fs::remove_all(path); }
};

// Hands one end of a fresh stream pair to the proxy over the channel, as init does for each
// connection inside the sandbox; returns the client's end.
UniqueFd connectThrough(const UniqueFd& channel) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return UniqueFd();
  UniqueFd client(pair[0]), proxy_end(pair[1]);
  const char byte = 0;
  if (sendWithFd(channel.get(), &byte, 1, proxy_end.get()) != 0) return UniqueFd();
  return client;
}

std::string readAll(const UniqueFd& fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

size_t egressLines(const std::string& trace_path) {
  std::ifstream in(trace_path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);)
    if (line.find("\"type\":\"egress\"") != std::string::npos) ++n;
  return n;
}

TEST(RunEgress, NoGrantsNoCredentialsNoProxy) {
  auto egress = RunEgress::start(policy::Manifest{}, "run-1");
  ASSERT_TRUE(egress.ok()) << egress.error().message();
  EXPECT_EQ(*egress, nullptr);
}

// Requests are refused (no grant for their host) on the proxy thread while this thread
// flushes: every refusal lands in the trace exactly once, during the run or after stop().
TEST(RunEgress, EventsFromTheProxyThreadReachTheTraceWhileFlushing) {
  Dir ws;
  policy::Manifest m;
  m.network.allow = {"https://granted.example:443"};
  auto egress = RunEgress::start(m, "run-1");
  ASSERT_TRUE(egress.ok()) << egress.error().message();
  ASSERT_NE(*egress, nullptr);
  auto trace = audit::TraceWriter::openInWorkspace(ws.path);
  ASSERT_TRUE(trace.ok()) << trace.error().message();
  auto channel = (*egress)->attach();
  ASSERT_TRUE(channel.ok()) << channel.error().message();

  constexpr int kRequests = 20;
  std::thread clients([&] {
    for (int i = 0; i < kRequests; ++i) {
      UniqueFd c = connectThrough(*channel);
      if (!c.valid()) return;
      const std::string req = "GET http://denied" + std::to_string(i) + ".example/ HTTP/1.1\r\nHost: denied" +
                              std::to_string(i) + ".example\r\nConnection: close\r\n\r\n";
      if (::write(c.get(), req.data(), req.size()) != static_cast<ssize_t>(req.size())) return;
      readAll(c);  // the 403, then EOF
    }
  });
  const std::string trace_path = ws.path + "/.corral/trace.jsonl";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (egressLines(trace_path) < kRequests && std::chrono::steady_clock::now() < deadline) {
    auto flushed = (*egress)->flush(*trace);
    ASSERT_TRUE(flushed.ok()) << flushed.error().message();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  clients.join();
  (*egress)->stop();
  auto flushed = (*egress)->flush(*trace);
  ASSERT_TRUE(flushed.ok()) << flushed.error().message();
  EXPECT_EQ(egressLines(trace_path), static_cast<size_t>(kRequests));
  EXPECT_EQ(trace->count(), static_cast<uint64_t>(kRequests));
}

}  // namespace
}  // namespace corral::agent
