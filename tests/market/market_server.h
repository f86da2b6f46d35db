// SPDX-License-Identifier: Apache-2.0
// A real `corral market serve` process for tests: started on port 0, its log captured, the
// admin CLI and the HTTP API driven the way agents drive them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "market/client.h"
#include "market_fixture.h"
#include "process.h"

namespace corral::market::testing {

class ServerProcess {
 public:
  // Waits for the "listening on" line; nullptr (with a test failure) when it never comes.
  static std::unique_ptr<ServerProcess> start(const std::string& db_url, const corral::testing::TempDir& tmp,
                                              const std::vector<std::string>& extra = {},
                                              const std::vector<std::string>& env_extra = {});
  int termSignal() const { return term_signal_; }
  ~ServerProcess();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& adminSocket() const { return admin_; }
  // SIGTERM and wait; returns the server's stderr (its log).
  std::string stop();
  void kill9();

 private:
  std::optional<corral::testing::Process> proc_;
  int port_ = 0;
  std::string admin_;
  std::string log_;
  bool stopped_ = false;
  int term_signal_ = 0;
};

// The whole cycle over HTTP, as scripted agents (the buyer's wraps made here, not by the
// CLI); returns the task id and the verdict call's answer (an error when the server died).
struct HttpCycle {
  std::string task;
  Result<client::Response> verdict = Error(Errc::kIo, "not reached");
};
HttpCycle httpCycle(const std::string& url, const client::Identity& buyer, const client::Identity& seller,
                    const client::Identity& judge, const std::string& reason);

// `corral market ARGS...` as a real process.
corral::testing::RunResult corralMarket(const std::vector<std::string>& args,
                                        const std::vector<std::string>& env_extra = {});

// Registers through `corral market admin register`, returns the identity read back.
client::Identity registerViaCli(const ServerProcess& s, const corral::testing::TempDir& tmp, const std::string& role,
                                long long cap = 0, const std::string& extra = "");

}  // namespace corral::market::testing
