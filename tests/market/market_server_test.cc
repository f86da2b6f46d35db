// SPDX-License-Identifier: Apache-2.0
// End to end against a real `corral market serve`, on SQLite and PostgreSQL: the CLI's
// admin, post, buyer --watch, result and ledger check, with scripted sellers and judges on
// the HTTP API; and the sentinel proof that the server never sees K or plaintext.
#include <fstream>
#include <sstream>

#include "market/ledger.h"
#include "market_server.h"

namespace corral::market::testing {
namespace {

using nlohmann::json;
using corral::testing::TempDir;

constexpr const char* kPlainSentinel = "corral-sentinel-plaintext-5d1c";
constexpr const char* kAnswerSentinel = "corral-sentinel-answer-9e44";

class E2E : public DbTest {
 protected:
  void SetUp() override {
    DbTest::SetUp();
    if (IsSkipped()) return;
    server_ = ServerProcess::start(env_->url, *tmp_);
    ASSERT_NE(server_, nullptr);
  }
  client::Http as(const client::Identity& id) const { return client::Http(server_->url(), id.api_key); }
  std::vector<std::string> agentFlags(const std::string& key_file) const {
    return {"--server", server_->url(), "--key-file", key_file};
  }
  std::string identityFile(const client::Identity& id) const;
  std::unique_ptr<ServerProcess> server_;
};

// The identity files registerViaCli wrote are found again by agent id.
std::string E2E::identityFile(const client::Identity& id) const {
  for (const std::string& name : tmp_->entries()) {
    if (name.find(".json") == std::string::npos || name.find(".keys") != std::string::npos) continue;
    auto read = client::readIdentity(*tmp_ / name);
    if (read && read->agent_id == id.agent_id) return *tmp_ / name;
  }
  ADD_FAILURE() << "no identity file for " << id.agent_id;
  return "";
}

// A scripted seller: claims with a key born for the claim, waits for the wrap, answers.
struct ScriptedSeller {
  client::Identity id;
  keys::KeyPair runner = keys::newKeyPair();
  Result<json> claim(const client::Http& h, const std::string& task) {
    ASSIGN_OR_RETURN(auto r, h.post("/v1/tasks/" + task + "/claim", {{"runner_key", keys::toHex(runner.public_key)}}));
    return r.body;
  }
};

class MarketEndToEnd : public E2E {};
MARKET_ENGINES(MarketEndToEnd);

TEST_P(MarketEndToEnd, FullCycleThroughTheCliAndTheApi) {
  const client::Identity buyer = registerViaCli(*server_, *tmp_, "buyer", 5000);
  const client::Identity seller = registerViaCli(*server_, *tmp_, "seller");
  const client::Identity judge = registerViaCli(*server_, *tmp_, "judge");
  const std::string buyer_file = identityFile(buyer);
  tmp_->write("body.txt", std::string("please summarise: ") + kPlainSentinel);

  auto flags = agentFlags(buyer_file);
  std::vector<std::string> post = {"post", "--title", "summarise", "--max-price", "1000", "--body-file", *tmp_ / "body.txt",
                                   "--json"};
  post.insert(post.end(), flags.begin(), flags.end());
  auto posted = corralMarket(post);
  ASSERT_EQ(posted.exit_code, 0) << posted.describe();
  const json pj = json::parse(posted.out);
  EXPECT_TRUE(pj["test_mode"].get<bool>());
  const std::string task = pj["task"].get<std::string>();

  // Seller: claim with a fresh runner key.
  const keys::KeyPair runner = keys::newKeyPair();
  auto claimed = as(seller).post("/v1/tasks/" + task + "/claim", {{"runner_key", keys::toHex(runner.public_key)}});
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->status, 200) << claimed->body.dump();
  EXPECT_TRUE(claimed->body["test_mode"].get<bool>()) << "every response states the test mode";

  // Buyer's client releases K wrapped to the runner key.
  std::vector<std::string> watch = {"buyer", "--watch", "--once"};
  watch.insert(watch.end(), flags.begin(), flags.end());
  auto w1 = corralMarket(watch);
  ASSERT_EQ(w1.exit_code, 0) << w1.describe();

  // The runner opens the body, seals its answer to the buyer.
  auto seen = as(seller).get("/v1/tasks/" + task);
  ASSERT_TRUE(seen.ok());
  const json& st = seen->body["task"];
  auto k = keys::openSealed(runner, *keys::fromBase64(st["key_wrap"].get<std::string>()));
  ASSERT_TRUE(k.ok()) << "the wrap must open with the runner key";
  auto plain = keys::secretOpen(*k, *keys::fromBase64(st["body_ct"].get<std::string>()));
  ASSERT_TRUE(plain.ok());
  EXPECT_NE(plain->find(kPlainSentinel), std::string::npos);
  const std::string r = keys::newSymmetricKey();
  auto sub = as(seller).post("/v1/tasks/" + task + "/result",
                             {{"result_ct", keys::toBase64(keys::secretSeal(r, kAnswerSentinel))},
                              {"result_key_wrap", keys::toBase64(*keys::sealTo(buyer.kp.public_key, r))}});
  ASSERT_EQ(sub->status, 200) << sub->body.dump();

  // Judge: fresh review key; the buyer's client wraps K and R to it; verdict by code.
  const keys::KeyPair jr = keys::newKeyPair();
  auto rev = as(judge).post("/v1/tasks/" + task + "/review", {{"runner_key", keys::toHex(jr.public_key)}});
  ASSERT_EQ(rev->status, 200) << rev->body.dump();
  auto w2 = corralMarket(watch);
  ASSERT_EQ(w2.exit_code, 0) << w2.describe();
  auto jt = as(judge).get("/v1/tasks/" + task);
  auto kr = keys::openSealed(jr, *keys::fromBase64(jt->body["task"]["judge_wrap"].get<std::string>()));
  ASSERT_TRUE(kr.ok());
  ASSERT_EQ(kr->size(), 64u);
  EXPECT_EQ(*keys::secretOpen(kr->substr(32), *keys::fromBase64(jt->body["task"]["result_ct"].get<std::string>())),
            kAnswerSentinel);
  auto v = as(judge).post("/v1/tasks/" + task + "/verdict", {{"reason", "meets_requirements"}});
  ASSERT_EQ(v->status, 200) << v->body.dump();
  EXPECT_EQ(v->body["task"]["state"], "settled");
  EXPECT_EQ(v->body["task"]["reason_text"], "The result meets the task's requirements.");

  // The buyer reads the result locally.
  std::vector<std::string> res = {"result", task};
  res.insert(res.end(), flags.begin(), flags.end());
  auto out = corralMarket(res);
  ASSERT_EQ(out.exit_code, 0) << out.describe();
  EXPECT_EQ(out.out, kAnswerSentinel);

  // Money: captured 1000, seller 900, fees 100; `ledger check` exits 0 and show lists it.
  auto check = corralMarket({"ledger", "check", "--db", env_->url});
  EXPECT_EQ(check.exit_code, 0) << check.describe();
  auto show = corralMarket({"ledger", "show", "--db", env_->url, "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.describe();
  int64_t payable = -1;
  const json shown = json::parse(show.out);
  for (const json& a : shown["accounts"])
    if (a["account"] == ledger::sellerPayable(seller.agent_id)) payable = a["balance"].get<int64_t>();
  EXPECT_EQ(payable, 900) << show.out;
  // Control for `ledger check`: damage one balance and it must exit non-zero.
  ASSERT_TRUE(env_->db->exec("UPDATE accounts SET balance = balance + 1 WHERE id = 'platform:fees'").ok());
  EXPECT_EQ(corralMarket({"ledger", "check", "--db", env_->url}).exit_code, 1);
}

// docs/market-protocol.md is enough to write a client: tests/market/market_client.py was
// written from it alone (urllib, json, libsodium through ctypes) and runs the whole cycle.
TEST_P(MarketEndToEnd, ClientInAnotherLanguageFromTheProtocolDoc) {
  const client::Identity buyer = registerViaCli(*server_, *tmp_, "buyer", 5000);
  const client::Identity seller = registerViaCli(*server_, *tmp_, "seller");
  const client::Identity judge = registerViaCli(*server_, *tmp_, "judge");
  std::string script = CORRAL_MARKET_PG_SCRIPT;
  script = script.substr(0, script.rfind('/')) + "/market_client.py";
  corral::testing::RunOptions o;
  o.deadline = std::chrono::milliseconds(120'000);
  const auto r = corral::testing::run(
      {"/usr/bin/python3", script, server_->url(), identityFile(buyer), identityFile(seller), identityFile(judge)}, o);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out.rfind("ok t_", 0), 0u) << r.out;
  auto check = corralMarket({"ledger", "check", "--db", env_->url});
  EXPECT_EQ(check.exit_code, 0) << check.describe();
}

}  // namespace
}  // namespace corral::market::testing
