// SPDX-License-Identifier: Apache-2.0
// market.audit-chained: every step of the market is an event and a link of one SHA-256 hash
// chain; editing, removing, inserting or reordering a link is detected, and a rewrite of the
// whole tail is detected against a head saved earlier.
#include <set>
#include <thread>

#include "market/audit_chain.h"
#include "market_server.h"

namespace corral::market::testing {
namespace {

class MarketAuditChained : public DbTest {
 protected:
  audit_chain::Report verify(const std::optional<std::string>& trusted = std::nullopt) {
    auto r = audit_chain::verify(*env_->db, trusted);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
    return r.ok() ? *r : audit_chain::Report{};
  }
  void sql(const std::string& s, const Params& p = {}) {
    auto r = env_->db->exec(s, p);
    ASSERT_TRUE(r.ok()) << s << ": " << r.error().message();
  }
  int64_t count(const std::string& s) { return env_->db->exec(s)->num(0, 0); }
  // A cycle accepted, one rejected (a strike), an appeal and the admin's answers.
  void someHistory(const Parties& p) {
    env_->cfg.suspend_after_strikes = 1;
    auto accepted = runCycle(*env_->market, p.buyer, p.seller, p.judge, "meets_requirements");
    ASSERT_TRUE(accepted.ok());
    ASSERT_TRUE(env_->market->refund(accepted->task).ok());
    // A claim left unanswered past its deadline, then the task past its own.
    const SealedBody b = sealBody("x");
    auto t = env_->market->post(p.buyer.agent, {.title = "t", .category = "c", .model = "m", .max_price = 10,
                                                .deadline = env_->clock + 5000, .body_ct = b.ct_b64});
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE(env_->market->claim(*env_->market->agent(p.seller.agent.id), t->id, freshRunnerKey()).ok());
    env_->clock += env_->cfg.claim_seconds + 1;
    ASSERT_TRUE(env_->market->sweep().ok());
    env_->clock += 5000;
    ASSERT_TRUE(env_->market->sweep().ok());
    ASSERT_TRUE(runCycle(*env_->market, p.buyer, p.seller, p.judge, "incorrect").ok());
    ASSERT_TRUE(env_->market->appeal(*env_->market->agent(p.seller.agent.id)).ok());
    auto appeals = env_->market->openAppeals();
    ASSERT_TRUE(appeals.ok() && appeals->size() == 1);
    ASSERT_TRUE(env_->market->uphold(appeals->front().first).ok());
    ASSERT_TRUE(env_->market->reinstate(p.seller.agent.id).ok());
    ASSERT_TRUE(env_->market->setCap(p.buyer.agent.id, 2'000'000).ok());
  }
};
MARKET_ENGINES(MarketAuditChained);

TEST_P(MarketAuditChained, EveryStepIsAnEventAndALinkOfTheChain) {
  const Parties p = registerParties(*env_->market, 1'000'000);
  someHistory(p);
  const audit_chain::Report r = verify();
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.entries, count("SELECT COUNT(*) FROM events")) << "every event is a link";
  EXPECT_EQ(count("SELECT COUNT(*) FROM events WHERE seq IS NULL OR hash IS NULL OR prev IS NULL"), 0);
  EXPECT_EQ(r.unchained, 0);
  std::set<std::string> kinds;
  auto rows = env_->db->exec("SELECT kind FROM events ORDER BY seq");
  for (size_t i = 0; i < rows->rows.size(); ++i) kinds.insert(rows->text(i, 0));
  for (const char* k : {"agent_registered", "task_reserved", "task_open", "task_claimed", "key_released",
                        "result_submitted", "review_claimed", "judge_key_released", "verdict_accept", "task_settled",
                        "verdict_reject", "seller_strike", "agent_suspended", "hold_released", "appeal_opened",
                        "appeal_upheld", "agent_reinstated", "cap_set", "refund_started", "task_refunded",
                        "claim_expired", "task_expired"})
    EXPECT_TRUE(kinds.count(k)) << "no audit link for step " << k;
  // The first link chains after 64 zeros, each next one after its predecessor's hash.
  auto first = env_->db->exec("SELECT prev FROM events WHERE seq = 0");
  EXPECT_EQ(first->text(0, 0), std::string(64, '0'));
}

TEST_P(MarketAuditChained, TamperingWithAnyLinkIsDetected) {
  const Parties p = registerParties(*env_->market, 1'000'000);
  someHistory(p);
  const audit_chain::Report good = verify();
  ASSERT_TRUE(good.ok) << "control: the untouched chain verifies: " << good.failure;
  ASSERT_GT(good.entries, 10);
  const int64_t last = good.entries - 1;
  struct Tamper {
    const char* what;
    std::string doit, undo, expect;
  };
  auto row = env_->db->exec("SELECT id, at, kind, agent, task, amount, prev, hash FROM events WHERE seq = 5");
  const std::string id5 = row->text(0, 0);
  const std::string restore5 = "INSERT INTO events (id, at, kind, agent, task, amount, seq, prev, hash) VALUES ('" + id5 +
                               "', " + row->text(0, 1) + ", '" + row->text(0, 2) + "', '" + row->text(0, 3) + "', '" +
                               row->text(0, 4) + "', " + row->text(0, 5) + ", 5, '" + row->text(0, 6) + "', '" +
                               row->text(0, 7) + "')";
  auto lrow = env_->db->exec("SELECT id, at, kind, agent, task, amount, prev, hash FROM events WHERE seq = " +
                             std::to_string(last));
  const std::string restore_last = "INSERT INTO events (id, at, kind, agent, task, amount, seq, prev, hash) VALUES ('" +
                                   lrow->text(0, 0) + "', " + lrow->text(0, 1) + ", '" + lrow->text(0, 2) + "', '" +
                                   lrow->text(0, 3) + "', '" + lrow->text(0, 4) + "', " + lrow->text(0, 5) + ", " +
                                   std::to_string(last) + ", '" + lrow->text(0, 6) + "', '" + lrow->text(0, 7) + "')";
  const std::string l = std::to_string(last);
  const Tamper tampers[] = {
      {"an amount edited", "UPDATE events SET amount = amount + 1 WHERE seq = 3",
       "UPDATE events SET amount = amount - 1 WHERE seq = 3", "audit seq 3: the row does not match its hash"},
      {"a kind edited", "UPDATE events SET kind = 'zz_' || kind WHERE seq = 4",
       "UPDATE events SET kind = substr(kind, 4) WHERE seq = 4", "audit seq 4: the row does not match its hash"},
      {"an agent edited", "UPDATE events SET agent = agent || 'x' WHERE seq = 2",
       "UPDATE events SET agent = substr(agent, 1, length(agent) - 1) WHERE seq = 2",
       "audit seq 2: the row does not match its hash"},
      {"a time edited", "UPDATE events SET at = at - 3600 WHERE seq = 1", "UPDATE events SET at = at + 3600 WHERE seq = 1",
       "audit seq 1: the row does not match its hash"},
      {"a link removed", "DELETE FROM events WHERE seq = 5", restore5, "audit seq 5: missing"},
      {"two links swapped", "UPDATE events SET seq = -1 WHERE seq = 6",  // then 7 -> 6, -1 -> 7
       "UPDATE events SET seq = 6 WHERE seq = -1", "audit seq"},
      {"the last link removed", "DELETE FROM events WHERE seq = " + l, restore_last, "links removed at the end"},
      {"an unchained row inserted",
       "INSERT INTO events (id, at, kind, agent, task, amount) VALUES ('e_forged', 1, 'task_open', 'a', 't', 5)",
       "DELETE FROM events WHERE id = 'e_forged'", "without a chain position"},
      {"a link appended behind the head's back",
       "INSERT INTO events (id, at, kind, agent, task, amount, seq, prev, hash) VALUES ('e_forged', 1, 'task_open', 'a',"
       " 't', 5, " + std::to_string(last + 1) + ", '" + good.head + "', '" + std::string(64, 'a') + "')",
       "DELETE FROM events WHERE id = 'e_forged'", "audit seq " + std::to_string(last + 1)},
      {"the head row edited", "UPDATE audit_head SET head = '" + std::string(64, 'b') + "'",
       "UPDATE audit_head SET head = '" + good.head + "'", "audit head does not match the last link"},
  };
  for (const Tamper& t : tampers) {
    SCOPED_TRACE(t.what);
    sql(t.doit);
    if (std::string(t.what) == "two links swapped") {
      sql("UPDATE events SET seq = 6 WHERE seq = 7");
      sql("UPDATE events SET seq = 7 WHERE seq = -1");
    }
    const audit_chain::Report bad = verify();
    EXPECT_FALSE(bad.ok) << "market.audit-chained broken: " << t.what << " went unnoticed";
    EXPECT_NE(bad.failure.find(t.expect), std::string::npos) << bad.failure;
    if (std::string(t.what) == "two links swapped") {
      sql("UPDATE events SET seq = -1 WHERE seq = 7");
      sql("UPDATE events SET seq = 7 WHERE seq = 6");
    }
    sql(t.undo);
    const audit_chain::Report again = verify();
    EXPECT_TRUE(again.ok) << "control: undone, the chain verifies again: " << again.failure;
  }
}

// Someone who can write the database can drop the newest link and rewind the head: the chain
// alone cannot tell. A head saved earlier (`audit head`) can.
TEST_P(MarketAuditChained, TailRewriteIsCaughtByASavedHead) {
  const Parties p = registerParties(*env_->market, 1'000'000);
  someHistory(p);
  const audit_chain::Report saved = verify();
  ASSERT_TRUE(saved.ok);
  ASSERT_TRUE(verify(saved.head).ok) << "control: the saved head is a link";
  auto prev = env_->db->exec("SELECT prev FROM events WHERE seq = " + std::to_string(saved.entries - 1));
  sql("DELETE FROM events WHERE seq = " + std::to_string(saved.entries - 1));
  sql("UPDATE audit_head SET entries = entries - 1, head = ?", {prev->text(0, 0)});
  EXPECT_TRUE(verify().ok) << "the boundary as documented: a consistent rewrite passes without a saved head";
  const audit_chain::Report caught = verify(saved.head);
  EXPECT_FALSE(caught.ok) << "market.audit-chained broken: the rewrite went unnoticed against the saved head";
  EXPECT_NE(caught.failure.find("trusted head"), std::string::npos) << caught.failure;
  // New links after a saved head keep it valid: the head is a prefix, not the end.
  ASSERT_TRUE(env_->market->suspend(p.seller.agent.id).ok());
  const audit_chain::Report later = verify();
  EXPECT_TRUE(verify(later.head).ok);
}

TEST_P(MarketAuditChained, ConcurrentWritersChainOneAfterAnother) {
  const Parties p = registerParties(*env_->market, 1'000'000);
  std::vector<std::thread> threads;
  std::atomic<int> posted{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      auto env = sameDb(*env_);
      for (int j = 0; j < 8; ++j) {
        const SealedBody b = sealBody("x");
        auto t = env->market->post(p.buyer.agent, {.title = "t", .category = "c", .model = "m", .max_price = 10,
                                                   .deadline = env->clock + 3600, .body_ct = b.ct_b64});
        if (t.ok()) ++posted;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(posted.load(), 64);
  const audit_chain::Report r = verify();
  EXPECT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.entries, count("SELECT COUNT(*) FROM events"));
}

TEST_P(MarketAuditChained, CliVerifyExitsZeroOnlyOnAnIntactChain) {
  const Parties p = registerParties(*env_->market, 1'000'000);
  someHistory(p);
  auto ok = corralMarket({"audit", "verify", "--db", env_->url});
  EXPECT_EQ(ok.exit_code, 0) << ok.describe();
  EXPECT_NE(ok.out.find("intact"), std::string::npos) << ok.out;
  auto head = corralMarket({"audit", "head", "--db", env_->url});
  ASSERT_EQ(head.exit_code, 0) << head.describe();
  const std::string h = head.out.substr(0, 64);
  EXPECT_EQ(corralMarket({"audit", "verify", "--db", env_->url, "--trusted-head", h}).exit_code, 0);
  auto bad_flag = corralMarket({"audit", "verify", "--db", env_->url, "--trusted-head", "xyz"});
  EXPECT_EQ(bad_flag.exit_code, 125) << bad_flag.describe();
  EXPECT_EQ(corralMarket({"audit", "verify", "--db", env_->url, "--bogus"}).exit_code, 125);
  sql("UPDATE events SET amount = amount + 1 WHERE seq = 2");
  auto broken = corralMarket({"audit", "verify", "--db", env_->url, "--json"});
  EXPECT_EQ(broken.exit_code, 1) << broken.describe();
  const nlohmann::json j = nlohmann::json::parse(broken.out);
  EXPECT_FALSE(j["ok"].get<bool>());
  EXPECT_NE(j["failure"].get<std::string>().find("audit seq 2"), std::string::npos) << broken.out;
}

// The chain as docs/market-protocol.md defines it, checked by a Python verifier that shares
// no code with corral (hashlib and sqlite3, or the psql CLI).
TEST_P(MarketAuditChained, IndependentVerifierAgreesAndSeesTampering) {
  const Parties p = registerParties(*env_->market, 1'000'000);
  someHistory(p);
  const audit_chain::Report r = verify();
  ASSERT_TRUE(r.ok) << r.failure;
  std::string script = CORRAL_MARKET_PG_SCRIPT;
  script = script.substr(0, script.rfind('/')) + "/verify_market_audit.py";
  corral::testing::RunOptions o;
  o.deadline = std::chrono::milliseconds(120'000);
  const auto good = corral::testing::run({"/usr/bin/python3", script, env_->url}, o);
  EXPECT_EQ(good.exit_code, 0) << good.describe();
  EXPECT_EQ(good.out, "ok " + std::to_string(r.entries) + " " + r.head + "\n") << "the documented line format differs";
  sql("UPDATE events SET task = task || 'x' WHERE seq = 3");
  const auto bad = corral::testing::run({"/usr/bin/python3", script, env_->url}, o);
  EXPECT_EQ(bad.exit_code, 1) << "control: the independent verifier sees the edit: " << bad.describe();
  EXPECT_NE(bad.out.find("seq 3 hash"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace corral::market::testing
