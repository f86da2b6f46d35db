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
                                                    const std::vector<std::string>& extra,
                                                    const std::vector<std::string>& env_extra) {
  static std::atomic<int> n{0};
  auto s = std::make_unique<ServerProcess>();
  s->admin_ = tmp / ("admin-" + std::to_string(n++) + ".sock");
  std::vector<std::string> argv = {CORRAL_BIN, "market", "serve", "--db", db_url, "--listen", "127.0.0.1:0",
                                   "--admin-socket", s->admin_};
  argv.insert(argv.end(), extra.begin(), extra.end());
  corral::testing::RunOptions o;
  o.deadline = std::chrono::milliseconds(600'000);
  o.env_extra = env_extra;
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
  term_signal_ = r.term_signal;
  return log_;
}

void ServerProcess::kill9() {
  proc_->signal(SIGKILL);
  (void)stop();
}

HttpCycle httpCycle(const std::string& url, const client::Identity& buyer, const client::Identity& seller,
                    const client::Identity& judge, const std::string& reason) {
  HttpCycle c;
  const client::Http b(url, buyer.api_key), s(url, seller.api_key), j(url, judge.api_key);
  const std::string k = keys::newSymmetricKey();
  auto posted = b.post("/v1/tasks", {{"title", "t"}, {"max_price", 1000}, {"deadline", 4000000000LL},
                                     {"body_ct", keys::toBase64(keys::secretSeal(k, "body"))}});
  if (!posted || posted->status != 201) {
    ADD_FAILURE() << "post refused";
    return c;
  }
  c.task = posted->body["task"]["id"];
  const std::string t = "/v1/tasks/" + c.task;
  const keys::KeyPair runner = keys::newKeyPair(), jr = keys::newKeyPair();
  const std::string r = keys::newSymmetricKey();
  const std::pair<const client::Http*, std::pair<std::string, nlohmann::json>> steps[] = {
      {&s, {"/claim", {{"runner_key", keys::toHex(runner.public_key)}}}},
      {&b, {"/key", {{"wrap", keys::toBase64(*keys::sealTo(runner.public_key, k))}}}},
      {&s, {"/result", {{"result_ct", keys::toBase64(keys::secretSeal(r, "answer"))},
                        {"result_key_wrap", keys::toBase64(*keys::sealTo(buyer.kp.public_key, r))}}}},
      {&j, {"/review", {{"runner_key", keys::toHex(jr.public_key)}}}},
      {&b, {"/judge-key", {{"wrap", keys::toBase64(*keys::sealTo(jr.public_key, k + r))}}}},
  };
  for (const auto& [who, step] : steps) {
    auto res = who->post(t + step.first, step.second);
    if (!res || res->status != 200) {
      ADD_FAILURE() << "step " << step.first << " refused";
      return c;
    }
  }
  c.verdict = j.post(t + "/verdict", {{"reason", reason}});
  return c;
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
