// SPDX-License-Identifier: Apache-2.0
// The money rules on SQLite and PostgreSQL, attacked: concurrent posts against the cap,
// racing claims, runner keys, verdicts and strikes, settlement arithmetic.
#include <thread>

#include "market/ledger.h"
#include "market_fixture.h"

namespace corral::market::testing {
namespace {

NewTask sealedTask(int64_t price) {
  return {.title = "t", .category = "c", .model = "m", .max_price = price, .deadline = 4'000'000'000,
          .body_ct = sealBody("body").ct_b64};
}

// Posts `n` tasks of `price` at once, one connection per thread; returns how many were taken.
int concurrentPosts(const Env& env, const Agent& buyer, int n, int64_t price) {
  std::vector<std::unique_ptr<Env>> conns;
  for (int i = 0; i < n; ++i) conns.push_back(sameDb(env));
  std::atomic<int> ok{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      auto r = conns[i]->market->post(buyer, sealedTask(price));
      if (r.ok()) {
        ++ok;
      } else if (httpStatus(r.error()) != 402) {
        ++other;
        ADD_FAILURE() << "post failed other than by the cap: " << r.error().message();
      }
    });
  for (auto& t : threads) t.join();
  return ok.load();
}

class MarketCapAtomic : public DbTest {};
MARKET_ENGINES(MarketCapAtomic);

TEST_P(MarketCapAtomic, HundredConcurrentPostsNeverExceedTheCap) {
  const Scripted buyer = registerScripted(*env_->market, Role::kBuyer, 1000);
  const int taken = concurrentPosts(*env_, buyer.agent, 100, 30);
  EXPECT_EQ(taken, 33) << "market.cap-atomic broken: " << taken << " posts of 30 under a cap of 1000";
  auto a = env_->market->agent(buyer.agent.id);
  EXPECT_EQ(a->reserved, 990);
  EXPECT_EQ(*ledger::balance(*env_->db, ledger::buyerHeld(buyer.agent.id)), 990);
  EXPECT_TRUE(ledger::check(*env_->db)->problems.empty());
}

TEST_P(MarketCapAtomic, ControlWithRoomForAllEveryPostIsTaken) {
  const Scripted buyer = registerScripted(*env_->market, Role::kBuyer, 3000);
  EXPECT_EQ(concurrentPosts(*env_, buyer.agent, 100, 30), 100) << "refusals in the attack must come from the cap alone";
}

TEST_P(MarketCapAtomic, SpentCountsAgainstTheCapAndApprovalRechecksIt) {
  const Parties p = registerParties(*env_->market, 150);
  const Scripted& buyer = p.buyer;
  const Scripted& seller = p.seller;
  const Scripted& judge = p.judge;
  ASSERT_TRUE(runCycle(*env_->market, buyer, seller, judge, "meets_requirements", 100).ok());
  EXPECT_EQ(env_->market->agent(buyer.agent.id)->spent, 100);
  auto over = env_->market->post(buyer.agent, sealedTask(60));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(httpStatus(over.error()), 402);
  EXPECT_TRUE(env_->market->post(buyer.agent, sealedTask(50)).ok()) << "control: exactly the rest of the cap fits";

  const Scripted careful = registerScripted(*env_->market, Role::kBuyer, 100, /*approve_each=*/true);
  auto p1 = env_->market->post(careful.agent, sealedTask(80));
  auto p2 = env_->market->post(careful.agent, sealedTask(80));
  ASSERT_TRUE(p1.ok() && p2.ok());
  EXPECT_EQ(p1->state, "pending_approval");
  EXPECT_EQ(env_->market->agent(careful.agent.id)->reserved, 0) << "pending posts reserve nothing";
  EXPECT_TRUE(env_->market->approve(p1->id).ok());
  auto second = env_->market->approve(p2->id);
  ASSERT_FALSE(second.ok()) << "an approved post is still refused over the cap";
  EXPECT_EQ(httpStatus(second.error()), 402);
  EXPECT_EQ(env_->market->task(p2->id)->state, "refused");
  EXPECT_EQ(env_->market->agent(careful.agent.id)->reserved, 80);
}

TEST_P(MarketCapAtomic, FailedHoldGivesTheReservationBack) {
  // Funded 1000 at registration; the admin raises the cap without funding more, so a hold
  // of 1500 is declined by the provider after the reservation succeeded.
  const Scripted buyer = registerScripted(*env_->market, Role::kBuyer, 1000);
  ASSERT_TRUE(env_->market->setCap(buyer.agent.id, 5000).ok());
  auto r = env_->market->post(buyer.agent, sealedTask(1500));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(httpStatus(r.error()), 402);
  EXPECT_EQ(env_->market->agent(buyer.agent.id)->reserved, 0) << "the reservation must be given back";
  auto st = env_->db->exec("SELECT state FROM tasks");
  EXPECT_EQ(st->text(0, 0), "hold_failed");
  EXPECT_TRUE(env_->market->post(buyer.agent, sealedTask(900)).ok()) << "control: a hold within funds succeeds";
  EXPECT_TRUE(ledger::check(*env_->db)->problems.empty());
}

class MarketClaimExclusive : public DbTest {};
MARKET_ENGINES(MarketClaimExclusive);

int raceClaims(const Env& env, const std::vector<Scripted>& sellers, const std::vector<std::string>& task_ids) {
  std::vector<std::unique_ptr<Env>> conns;
  for (size_t i = 0; i < sellers.size(); ++i) conns.push_back(sameDb(env));
  std::atomic<int> won{0};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < sellers.size(); ++i)
    threads.emplace_back([&, i] {
      auto r = conns[i]->market->claim(sellers[i].agent, task_ids[i % task_ids.size()], freshRunnerKey());
      if (r.ok()) {
        ++won;
      } else if (httpStatus(r.error()) != 409) {
        ADD_FAILURE() << "claim failed other than by losing the race: " << r.error().message();
      }
    });
  for (auto& t : threads) t.join();
  return won.load();
}

TEST_P(MarketClaimExclusive, TenRacingSellersGiveExactlyOneClaim) {
  const Scripted buyer = registerScripted(*env_->market, Role::kBuyer, 1000);
  std::vector<Scripted> sellers;
  for (int i = 0; i < 10; ++i) sellers.push_back(registerScripted(*env_->market, Role::kSeller));
  auto t = env_->market->post(buyer.agent, sealedTask(100));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(raceClaims(*env_, sellers, {t->id}), 1) << "market.claim-exclusive broken";
  EXPECT_EQ(env_->market->task(t->id)->state, "claimed");
}

TEST_P(MarketClaimExclusive, ControlTenSellersOnTenTasksAllWin) {
  const Scripted buyer = registerScripted(*env_->market, Role::kBuyer, 1000);
  std::vector<Scripted> sellers;
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) {
    sellers.push_back(registerScripted(*env_->market, Role::kSeller));
    ids.push_back(env_->market->post(buyer.agent, sealedTask(10))->id);
  }
  EXPECT_EQ(raceClaims(*env_, sellers, ids), 10);
}

TEST_P(MarketClaimExclusive, UnansweredClaimIsReleasedAtItsDeadline) {
  const Scripted buyer = registerScripted(*env_->market, Role::kBuyer, 1000);
  const Scripted slow = registerScripted(*env_->market, Role::kSeller);
  const Scripted next = registerScripted(*env_->market, Role::kSeller);
  auto t = env_->market->post(buyer.agent, sealedTask(100));
  ASSERT_TRUE(env_->market->claim(slow.agent, t->id, freshRunnerKey()).ok());
  ASSERT_TRUE(env_->market->sweep().ok());
  EXPECT_EQ(env_->market->task(t->id)->state, "claimed") << "control: not yet due";
  env_->clock += env_->cfg.claim_seconds + 1;
  ASSERT_TRUE(env_->market->sweep().ok());
  EXPECT_EQ(env_->market->task(t->id)->state, "open");
  EXPECT_TRUE(env_->market->claim(next.agent, t->id, freshRunnerKey()).ok());
}

class MarketRunnerKeyRules : public DbTest {};
MARKET_ENGINES(MarketRunnerKeyRules);

TEST_P(MarketRunnerKeyRules, AgentKeysReusedKeysAndBadPointsAreRefused) {
  Market& m = *env_->market;
  const Parties p = registerParties(m, 10000);
  const Scripted& buyer = p.buyer;
  const Scripted& seller = p.seller;
  const Scripted& judge = p.judge;
  const std::string task = m.post(buyer.agent, sealedTask(100))->id;
  auto refused = [&](const std::string& key, const char* what) {
    auto r = m.claim(seller.agent, task, key);
    EXPECT_FALSE(r.ok()) << "market.runner-key-rules broken: accepted " << what;
    if (!r.ok()) {
      EXPECT_TRUE(httpStatus(r.error()) == 400 || httpStatus(r.error()) == 409) << r.error().message();
    }
  };
  refused(judge.agent.public_key, "the judge's own key");
  refused(buyer.agent.public_key, "the buyer's key");
  refused(seller.agent.public_key, "the seller's own key");
  const std::string p_minus_1 = "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f";
  for (const char* low : {"0000000000000000000000000000000000000000000000000000000000000000",
                          "0100000000000000000000000000000000000000000000000000000000000000",
                          "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
                          "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157", p_minus_1.c_str(),
                          "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
                          "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"})
    refused(low, "a low-order or non-canonical point");
  refused("abcd", "a short key");
  refused(std::string(64, 'g'), "a non-hex key");
  const std::string fresh = freshRunnerKey();
  std::string upper = fresh;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper != fresh) refused(upper, "an uppercase spelling");
  // The same point with the ignored top bit set: a second spelling of a key.
  std::string alias = fresh;
  alias[62] = "89abcdef01234567"[std::stoi(alias.substr(62, 1), nullptr, 16) & 0x7];
  refused(alias, "a key with the top bit set");
  // Control: the fresh key itself is taken; then it is spent for any other task.
  ASSERT_TRUE(m.claim(seller.agent, task, fresh).ok()) << "control: a fresh runner key must be accepted";
  const std::string other = m.post(buyer.agent, sealedTask(100))->id;
  auto reuse = m.claim(seller.agent, other, fresh);
  EXPECT_FALSE(reuse.ok()) << "market.runner-key-rules broken: a runner key was used twice";
  // A judge's review key follows the same rules.
  EXPECT_FALSE(m.claimReview(judge.agent, task, fresh).ok());
}

TEST_P(MarketRunnerKeyRules, ARunnerKeyCannotBeRegisteredAsAnAgentLater) {
  Market& m = *env_->market;
  const Scripted buyer = registerScripted(m, Role::kBuyer, 1000);
  const Scripted seller = registerScripted(m, Role::kSeller);
  const std::string key = freshRunnerKey();
  ASSERT_TRUE(m.claim(seller.agent, m.post(buyer.agent, sealedTask(10))->id, key).ok());
  auto reg = m.registerAgent({.role = Role::kJudge, .name = "j", .public_key = key});
  EXPECT_FALSE(reg.ok());
}

class MarketFixedVerdictText : public DbTest {};
MARKET_ENGINES(MarketFixedVerdictText);

TEST_P(MarketFixedVerdictText, OnlyCodesAreStoredAndUnknownCodesRefused) {
  Market& m = *env_->market;
  const Parties p = registerParties(m, 10000);
  const Scripted& buyer = p.buyer;
  const Scripted& seller = p.seller;
  const Scripted& judge = p.judge;
  auto bad = runCycle(m, buyer, seller, judge, "The model says: this answer is great");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(httpStatus(bad.error()), 400);
  auto rows = env_->db->exec("SELECT COUNT(*) FROM tasks WHERE verdict IS NOT NULL OR reason IS NOT NULL");
  EXPECT_EQ(rows->num(0, 0), 0) << "an unknown code must leave nothing behind";
  auto ok = runCycle(m, buyer, seller, judge, "incorrect");
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  auto t = m.task(ok->task);
  EXPECT_EQ(t->verdict, "reject");
  EXPECT_EQ(t->reason, "incorrect");
  EXPECT_EQ(t->state, "rejected");
}

TEST_P(MarketFixedVerdictText, InfrastructureFailureDefersWithoutAStrike) {
  Market& m = *env_->market;
  const Parties p = registerParties(m, 10000);
  const Scripted& buyer = p.buyer;
  const Scripted& seller = p.seller;
  const Scripted& judge = p.judge;
  for (const char* infra : {"judge_unavailable", "judge_timeout", "judge_malformed"}) {
    auto c = runCycle(m, buyer, seller, judge, infra);
    ASSERT_TRUE(c.ok()) << c.error().message();
    EXPECT_EQ(m.task(c->task)->state, "submitted") << infra << " must defer the review";
  }
  EXPECT_EQ(m.agent(seller.agent.id)->strikes, 0) << "a judge failure struck the seller";
  EXPECT_EQ(m.agent(buyer.agent.id)->reserved, 300) << "deferred tasks keep their holds";
}

TEST_P(MarketFixedVerdictText, StrikesSuspendAndAppealReinstates) {
  Market& m = *env_->market;
  env_->cfg.suspend_after_strikes = 3;
  const Parties p = registerParties(m, 10000);
  const Scripted& buyer = p.buyer;
  const Scripted& seller = p.seller;
  const Scripted& judge = p.judge;
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(runCycle(m, buyer, seller, judge, "incomplete").ok());
  EXPECT_FALSE(m.agent(seller.agent.id)->suspended) << "control: two strikes of three";
  EXPECT_FALSE(m.appeal(seller.agent).ok()) << "only a suspended seller appeals";
  ASSERT_TRUE(runCycle(m, buyer, seller, judge, "off_task").ok());
  EXPECT_TRUE(m.agent(seller.agent.id)->suspended);
  auto blocked = runCycle(m, buyer, seller, judge, "meets_requirements");
  ASSERT_FALSE(blocked.ok()) << "a suspended seller claimed";
  ASSERT_TRUE(m.appeal(seller.agent).ok());
  auto appeals = m.openAppeals();
  ASSERT_EQ(appeals->size(), 1u);
  ASSERT_TRUE(m.reinstate(seller.agent.id).ok());
  EXPECT_TRUE(m.openAppeals()->empty());
  EXPECT_TRUE(runCycle(m, buyer, seller, judge, "meets_requirements").ok());
}

class MarketSettlement : public DbTest {};
MARKET_ENGINES(MarketSettlement);

TEST_P(MarketSettlement, AcceptCapturesAndTransfersMinusFeeRejectReleases) {
  Market& m = *env_->market;
  const Parties p = registerParties(m, 10000);
  const Scripted& buyer = p.buyer;
  const Scripted& seller = p.seller;
  const Scripted& judge = p.judge;
  ASSERT_TRUE(runCycle(m, buyer, seller, judge, "meets_requirements", 1000).ok());
  ASSERT_TRUE(runCycle(m, buyer, seller, judge, "incorrect", 500).ok());
  auto bal = [&](const std::string& a) { return *ledger::balance(*env_->db, a); };
  EXPECT_EQ(bal(ledger::buyerAvailable(buyer.agent.id)), 9000);
  EXPECT_EQ(bal(ledger::buyerHeld(buyer.agent.id)), 0);
  EXPECT_EQ(bal(ledger::sellerPayable(seller.agent.id)), 900);
  EXPECT_EQ(bal(ledger::kPlatformFees), 100);
  EXPECT_EQ(bal(ledger::kPlatformCaptured), 0);
  auto a = m.agent(buyer.agent.id);
  EXPECT_EQ(a->spent, 1000);
  EXPECT_EQ(a->reserved, 0);
  // Refund after capture: an admin operation that reverses the settlement.
  auto settled = env_->db->exec("SELECT id FROM tasks WHERE state = 'settled'");
  ASSERT_TRUE(m.refund(settled->text(0, 0)).ok());
  EXPECT_FALSE(m.refund(settled->text(0, 0)).ok()) << "a second refund";
  EXPECT_EQ(bal(ledger::buyerAvailable(buyer.agent.id)), 10000);
  EXPECT_EQ(bal(ledger::sellerPayable(seller.agent.id)), 0);
  EXPECT_EQ(m.agent(buyer.agent.id)->spent, 0);
  EXPECT_TRUE(ledger::check(*env_->db)->problems.empty());
}

}  // namespace
}  // namespace corral::market::testing
