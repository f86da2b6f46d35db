// SPDX-License-Identifier: Apache-2.0
// ServerProcess and the CLI helpers of the market's end-to-end tests.
#include "market_server.h"

#include <signal.h>

#include <atomic>

namespace corral::market::testing {

corral::testing::RunResult corralMarket(const std::vector<std::string>& args, const std::vector<std::string>& env_extra) {
  std::vector<std::string> argv = {CORRAL_BIN, "market"};
  argv.insert(argv.end(), args.begin(), args.end());
  corral::testing::RunOptions o;
  o.env_extra = env_extra;
  o.deadline = std::chrono::milliseconds(120'000);
  return corral::testing::run(argv, o);
}

std::unique_ptr<ServerProcess> ServerProcess::start(const std::string& db_url, const corral::testing::TempDir& tmp,
                                                    const std::vector<std::string>& extra) {
  static std::atomic<int> n{0};
  auto s = std::make_unique<ServerProcess>();
  s->admin_ = tmp / ("admin-" + std::to_string(n++) + ".sock");
  std::vector<std::string> argv = {CORRAL_BIN, "market", "serve", "--db", db_url, "--listen", "127.0.0.1:0",
                                   "--admin-socket", s->admin_};
  argv.insert(argv.end(), extra.begin(), extra.end());
  corral::testing::RunOptions o;
  o.deadline = std::chrono::milliseconds(600'000);
  s->proc_.emplace(corral::testing::Process::start(argv, o));
  auto line = s->proc_->readLine(std::chrono::milliseconds(120'000));
  const std::string marker = "listening on 127.0.0.1:";
  if (!line || line->find(marker) == std::string::npos) {
    ADD_FAILURE() << "market serve did not start: " << s->proc_->wait().describe();
    return nullptr;
  }
  s->port_ = std::stoi(line->substr(line->find(marker) + marker.size()));
  return s;
}

ServerProcess::~ServerProcess() {
  if (!stopped_) (void)stop();
}

std::string ServerProcess::stop() {
  if (stopped_) return log_;
  stopped_ = true;
  proc_->signal(SIGTERM);
  auto r = proc_->wait();
  log_ = r.err;
  return log_;
}

void ServerProcess::kill9() {
  proc_->signal(SIGKILL);
  auto r = proc_->wait();
  log_ = r.err;
  stopped_ = true;
}

client::Identity registerViaCli(const ServerProcess& s, const corral::testing::TempDir& tmp, const std::string& role,
                                long long cap, const std::string& extra) {
  static std::atomic<int> n{0};
  const std::string file = tmp / (role + "-" + std::to_string(n++) + ".json");
  std::vector<std::string> args = {"admin", "--admin-socket", s.adminSocket(), "register", "--role", role,
                                   "--name", role + "-e2e", "--out", file};
  if (cap > 0) {
    args.push_back("--spend-cap");
    args.push_back(std::to_string(cap));
  }
  if (!extra.empty()) args.push_back(extra);
  auto r = corralMarket(args);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  auto id = client::readIdentity(file);
  EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error().message());
  return id.ok() ? *id : client::Identity{};
}

}  // namespace corral::market::testing
