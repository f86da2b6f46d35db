// SPDX-License-Identifier: Apache-2.0
// market.crash-recovery: SIGKILL at random points of the money flow, then recovery at start
// completes or reverts every movement in flight, and the ledger checks out.
#include <sys/wait.h>
#include <unistd.h>

#include <random>

#include "market/audit_chain.h"
#include "market/ledger.h"
#include "market_server.h"

namespace corral::market::testing {
namespace {

constexpr const char* kPoints[] = {"post.reserved",   "post.held",        "settle.decided", "settle.captured",
                                   "settle.transferred", "release.decided", "release.released", "refund.refunded"};

// The child's flow (three cycles and a refund) runs more SQL statements than this on both
// engines; a statement round that completes fails the test, so this cannot drift silently.
constexpr int kFlowStatements = 300;

// In a forked child: the scripted flow over three tasks (accept, reject, accept + refund),
// with the failpoint armed. Exits 0 when the failpoint never fired.
[[noreturn]] void childFlow(const std::string& url, const std::string& point, int nth, const Scripted& buyer,
                            const Scripted& seller, const Scripted& judge) {
  const std::string spec = point + ":" + std::to_string(nth);
  ::setenv("CORRAL_MARKET_FAILPOINT", spec.c_str(), 1);
  auto env = makeEnv(url);
  if (!env) ::_exit(3);
  env->cfg.suspend_after_strikes = 1'000'000;  // twenty rounds of one rejection each
  Market& m = *env->market;
  auto a = runCycle(m, buyer, seller, judge, "meets_requirements");
  auto b = runCycle(m, buyer, seller, judge, "incorrect");
  auto c = runCycle(m, buyer, seller, judge, "meets_requirements");
  if (c.ok()) (void)m.refund(c->task);
  ::_exit(a.ok() && b.ok() && c.ok() ? 0 : 4);
}

// The money invariants beyond the ledger's own: nothing is left in flight, and every
// buyer's reservation equals the prices of its tasks that still hold money.
void expectConsistent(Env& env, const std::string& seed_note) {
  auto check = ledger::check(*env.db);
  ASSERT_TRUE(check.ok());
  EXPECT_TRUE(check->problems.empty()) << "market.crash-recovery broken (" << seed_note << "): " << check->problems.front();
  auto inflight = env.db->exec("SELECT COUNT(*) FROM tasks WHERE state IN ('reserved', 'capturing', 'releasing', 'refunding')");
  EXPECT_EQ(inflight->num(0, 0), 0) << seed_note;
  // Each link is written in its step's transaction: a kill leaves no gap and no orphan.
  auto chain = audit_chain::verify(*env.db);
  ASSERT_TRUE(chain.ok());
  EXPECT_TRUE(chain->ok) << "audit chain broken by a kill (" << seed_note << "): " << chain->failure;
  auto res = env.db->exec(
      "SELECT a.id, a.reserved, COALESCE((SELECT SUM(max_price) FROM tasks t WHERE t.buyer = a.id AND t.state IN"
      " ('open', 'claimed', 'submitted', 'reviewing')), 0), a.spent,"
      " COALESCE((SELECT SUM(price) FROM tasks t WHERE t.buyer = a.id AND t.state = 'settled'), 0)"
      " FROM agents a WHERE a.role = 'buyer'");
  for (size_t i = 0; i < res->rows.size(); ++i) {
    EXPECT_EQ(res->num(i, 1), res->num(i, 2)) << "reserved drifted for " << res->text(i, 0) << " (" << seed_note << ")";
    EXPECT_EQ(res->num(i, 3), res->num(i, 4)) << "spent drifted for " << res->text(i, 0) << " (" << seed_note << ")";
    // The held balance is exactly the reservations: each hold was placed once or given back.
    EXPECT_EQ(*ledger::balance(*env.db, ledger::buyerHeld(res->text(i, 0))), res->num(i, 1)) << seed_note;
  }
}

class MarketCrashRecovery : public DbTest {};
MARKET_ENGINES(MarketCrashRecovery);

TEST_P(MarketCrashRecovery, KillNineAtTwentyRandomPointsThenRecoveryBalances) {
  const Parties p = registerParties(*env_->market, 1'000'000);
  const Scripted& buyer = p.buyer;
  const Scripted& seller = p.seller;
  const Scripted& judge = p.judge;
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  int killed = 0, statement_rounds = 0;
  for (int round = 0; round < 20; ++round) {
    // Even rounds: a named step of the money flow (its first or second passage). Odd rounds:
    // between any two SQL statements of the flow (BEGIN and COMMIT included), chosen
    // uniformly among the first kFlowStatements, so kills land mid-transaction too.
    const bool by_statement = round % 2 == 1;
    const std::string point = by_statement ? "db.statement" : kPoints[rng() % std::size(kPoints)];
    // The last round kills at the bound itself, so a shorter flow fails here every run.
    const int nth = !by_statement ? 1 + static_cast<int>(rng() % 2)
                    : round == 19 ? kFlowStatements
                                  : 1 + static_cast<int>(rng() % kFlowStatements);
    statement_rounds += by_statement ? 1 : 0;
    const std::string note = "seed " + std::to_string(seed) + " round " + std::to_string(round) + " " + point + ":" +
                             std::to_string(nth);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) childFlow(env_->url, point, nth, buyer, seller, judge);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status)) {
      EXPECT_EQ(WTERMSIG(status), SIGKILL) << note;
      ++killed;
    } else if (by_statement) {
      ADD_FAILURE() << "the flow ran fewer than " << nth << " statements: lower kFlowStatements (" << note << ")";
    } else {
      EXPECT_EQ(WEXITSTATUS(status), 0) << "the flow failed without the failpoint firing: " << note;
    }
    // The restart: a new process's first act is recovery.
    auto restarted = makeEnv(env_->url);
    ASSERT_NE(restarted, nullptr);
    auto rec = restarted->market->recover();
    ASSERT_TRUE(rec.ok()) << rec.error().message() << " " << note;
    expectConsistent(*restarted, note);
  }
  EXPECT_EQ(statement_rounds, 10);
  EXPECT_GE(killed, 12) << "most rounds must really die mid-flow (seed " << seed << ")";
}

TEST_P(MarketCrashRecovery, ControlWithoutRecoveryTheDamageIsVisible) {
  const Parties p = registerParties(*env_->market, 1'000'000);
  const Scripted& buyer = p.buyer;
  const Scripted& seller = p.seller;
  const Scripted& judge = p.judge;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) childFlow(env_->url, "settle.captured", 1, buyer, seller, judge);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  // Killed between capture and transfer: the money sits in platform:captured until recovery.
  auto restarted = makeEnv(env_->url);
  EXPECT_EQ(*ledger::balance(*restarted->db, ledger::kPlatformCaptured), 100);
  auto inflight = restarted->db->exec("SELECT COUNT(*) FROM tasks WHERE state = 'capturing'");
  EXPECT_EQ(inflight->num(0, 0), 1);
  ASSERT_TRUE(restarted->market->recover().ok());
  EXPECT_EQ(*ledger::balance(*restarted->db, ledger::kPlatformCaptured), 0);
  EXPECT_EQ(*ledger::balance(*restarted->db, ledger::sellerPayable(seller.agent.id)), 90);
}

// The real server process: SIGKILLed between capture and transfer while answering the
// verdict, then started again on the same database.
TEST_P(MarketCrashRecovery, ServerProcessKilledMidSettlementRecoversAtRestart) {
  auto server = ServerProcess::start(env_->url, *tmp_, {}, {"CORRAL_MARKET_FAILPOINT=settle.captured"});
  ASSERT_NE(server, nullptr);
  const client::Identity buyer = registerViaCli(*server, *tmp_, "buyer", 5000);
  const client::Identity seller = registerViaCli(*server, *tmp_, "seller");
  const client::Identity judge = registerViaCli(*server, *tmp_, "judge");
  const HttpCycle c = httpCycle(server->url(), buyer, seller, judge, "meets_requirements");
  EXPECT_FALSE(c.verdict.ok()) << "the server answered a verdict it should have died in";
  (void)server->stop();
  EXPECT_EQ(server->termSignal(), SIGKILL);
  EXPECT_EQ(*ledger::balance(*env_->db, ledger::kPlatformCaptured), 1000) << "control: killed after the capture";
  EXPECT_EQ(*ledger::balance(*env_->db, ledger::sellerPayable(seller.agent_id)), 0) << "control: before the transfer";

  auto restarted = ServerProcess::start(env_->url, *tmp_);  // recovery runs before it listens
  ASSERT_NE(restarted, nullptr);
  auto t = client::Http(restarted->url(), buyer.api_key).get("/v1/tasks/" + c.task);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->body["task"]["state"], "settled") << "market.crash-recovery broken: the settlement was not completed";
  EXPECT_EQ(*ledger::balance(*env_->db, ledger::sellerPayable(seller.agent_id)), 900);
  EXPECT_EQ(*ledger::balance(*env_->db, ledger::kPlatformCaptured), 0);
  auto check = corralMarket({"ledger", "check", "--db", env_->url});
  EXPECT_EQ(check.exit_code, 0) << check.describe();
}

}  // namespace
}  // namespace corral::market::testing
