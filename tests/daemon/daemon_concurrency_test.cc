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

}  // namespace
}  // namespace corral::testing
