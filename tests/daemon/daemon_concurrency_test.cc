// SPDX-License-Identifier: Apache-2.0
// 200 concurrent API clients (python threads, http.client over AF_UNIX, one connection each,
// released together by a barrier) against one daemon: health, session ls, show and exec in
// one shared session are all served, and every command's exit status is the one it asked for.
#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

RunResult clients(const Daemon& d, const std::string& session, int n) {
  RunOptions o;
  o.deadline = std::chrono::milliseconds(240'000);
  return run({"/usr/bin/python3", CORRAL_SOURCE_DIR "/tests/daemon/concurrent_clients.py", d.socket(), session, std::to_string(n)}, o);
}

TEST(DaemonConcurrentClients, TwoHundredMixedClientsAreAllServed) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  RunResult r = clients(d, id, 200);
  std::printf("%s", r.out.c_str());
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.describe();
  EXPECT_EQ(j["served"].value("health", 0) + j["served"].value("list", 0) + j["served"].value("show", 0) + j["served"].value("exec", 0), 200)
      << r.out;
  // The daemon is still whole afterwards: one more command, and its log names no failure.
  EXPECT_EQ(sessionExec(d, id, {"echo", "after"}).out, "after\n");
  EXPECT_EQ(d.stderrText().find("status=5"), std::string::npos) << "a 5xx was answered";
}

// Control: the client counts a refusal as an error (a session that does not exist: every
// show and exec fails, and the script says so).
TEST(DaemonConcurrentClients, ControlTheClientsReportAFailure) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  RunResult r = clients(d, "0123456789abcdef", 8);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.describe();
  EXPECT_EQ(j["error_count"], 6) << r.out;  // list, show and exec of clients 1-3 and 5-7
}

// Connections that never send a byte: each holds the thread that accepted it (up to the I/O
// timeout), so the server must start another for the next client, and past kMaxConnections
// (256) it must answer at once that it is busy rather than leave clients queued.
nlohmann::json silentRun(const Daemon& d, int silent, int want) {
  RunOptions o;
  o.deadline = std::chrono::milliseconds(120'000);
  RunResult r = run({"/usr/bin/python3", CORRAL_SOURCE_DIR "/tests/daemon/silent_clients.py", d.socket(), std::to_string(silent),
                     std::to_string(want)},
                    o);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  return nlohmann::json::parse(r.out, nullptr, false);
}

TEST(DaemonConcurrentClients, SilentConnectionsDoNotStallTheClientsBesideThem) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  // More than the acceptors that wait idle (4) and those started with the server (2).
  const auto j = silentRun(d, 16, 200);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["status"], 200) << j.dump();
  EXPECT_LT(j["seconds"].get<double>(), 5.0) << "served only after the silent connections timed out: " << j.dump();
  // Control: the silent connections really were pending (each held its thread), so the test
  // can fail: a server with one thread per accept loop would have stalled here.
  EXPECT_EQ(j["silent_pending"], 16) << j.dump();
  EXPECT_EQ(j["after"], 200) << j.dump();
}

TEST(DaemonConcurrentClients, PastTheConnectionCapAClientIsToldBusyAtOnce) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const auto j = silentRun(d, 256, 503);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["status"], 503) << j.dump();
  EXPECT_EQ(j["code"], "busy") << j.dump();
  EXPECT_LT(j["seconds"].get<double>(), 15.0) << j.dump();
  // Once the silent ones close, the daemon serves again (their threads are freed).
  EXPECT_EQ(j["after"], 200) << j.dump();
}

}  // namespace
}  // namespace corral::testing
