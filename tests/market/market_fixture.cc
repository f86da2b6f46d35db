// SPDX-License-Identifier: Apache-2.0
// The market fixture: PostgreSQL cluster lifecycle, fresh databases, scripted agents.
#include "market_fixture.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "market/schema.h"

namespace corral::market::testing {
namespace {

constexpr const char* kPgBin = "/usr/lib/postgresql/15/bin";

std::string g_why;

bool ready(const std::string& dir) { return ::access((dir + "/ready").c_str(), F_OK) == 0; }

}  // namespace

const std::string& PgCluster::why() { return g_why; }

PgCluster* PgCluster::get() {
  static PgCluster* cluster = []() -> PgCluster* {
    if (::access((std::string(kPgBin) + "/initdb").c_str(), X_OK) != 0) {
      g_why = "PostgreSQL 15 binaries missing (" + std::string(kPgBin) + "); scripts/bootstrap.sh installs postgresql";
      return nullptr;
    }
    auto* c = new PgCluster();
    // Under ctest the MarketPg.Start fixture has started one cluster for the whole run.
    if (const char* prefix = std::getenv("CORRAL_MARKET_PG_DIR_PREFIX")) {
      const std::string shared = std::string(prefix) + "-" + std::to_string(::geteuid());
      if (ready(shared)) {
        c->socket_dir_ = shared;
        return c;
      }
    }
    // Run by hand: a cluster of this binary's own, stopped at exit.
    c->dir_ = std::make_unique<corral::testing::TempDir>("corral-market-pg");
    c->data_dir_ = *c->dir_ / "pg";
    corral::testing::RunOptions o;
    o.deadline = std::chrono::milliseconds(180'000);
    auto start = corral::testing::run({CORRAL_MARKET_PG_SCRIPT, "start", c->data_dir_}, o);
    if (start.exit_code != 0 || !ready(c->data_dir_)) {
      g_why = "could not start PostgreSQL: " + start.describe();
      return nullptr;
    }
    c->socket_dir_ = c->data_dir_;
    std::atexit([] { delete PgCluster::get(); });
    return c;
  }();
  return cluster;
}

PgCluster::~PgCluster() {
  if (!data_dir_.empty()) (void)corral::testing::run({CORRAL_MARKET_PG_SCRIPT, "stop", data_dir_});
}

std::string PgCluster::newDatabase() {
  const std::string name = "t" + std::to_string(::getpid()) + "_" + std::to_string(counter_++);
  const std::string base = "postgresql:///postgres?host=" + socket_dir_ + "&user=corral";
  auto admin = openDb(base);
  EXPECT_TRUE(admin.ok()) << admin.error().message();
  if (admin) {
    auto r = (*admin)->exec("CREATE DATABASE " + name);
    EXPECT_TRUE(r.ok()) << r.error().message();
  }
  return "postgresql:///" + name + "?host=" + socket_dir_ + "&user=corral";
}

std::string freshDbUrl(const std::string& engine, const corral::testing::TempDir& tmp) {
  if (engine == "sqlite") {
    static std::atomic<int> n{0};
    return "sqlite:" + tmp / ("market-" + std::to_string(n++) + ".db");
  }
  return PgCluster::get()->newDatabase();
}

std::unique_ptr<Env> makeEnv(const std::string& url) {
  auto env = std::make_unique<Env>();
  env->url = url;
  auto db = openDb(url);
  EXPECT_TRUE(db.ok()) << db.error().message();
  if (!db) return nullptr;
  env->db = std::move(*db);
  auto v = migrate(*env->db);
  EXPECT_TRUE(v.ok()) << v.error().message();
  env->provider = ledgerProvider(*env->db);
  Env* raw = env.get();
  env->cfg.now = [raw] { return raw->clock.load(); };
  env->market = std::make_unique<Market>(*env->db, *env->provider, env->cfg);
  return env;
}

std::unique_ptr<Env> sameDb(const Env& env) {
  auto other = makeEnv(env.url);
  if (other) {
    other->cfg.fee_bps = env.cfg.fee_bps;
    other->cfg.suspend_after_strikes = env.cfg.suspend_after_strikes;
    other->clock = env.clock.load();
  }
  return other;
}

Scripted registerScripted(Market& m, Role role, int64_t cap, bool approve_each) {
  Scripted s;
  s.kp = keys::newKeyPair();
  auto reg = m.registerAgent({.role = role, .name = std::string(roleName(role)) + "-scripted",
                              .public_key = keys::toHex(s.kp.public_key), .spend_cap = cap, .approve_each = approve_each});
  EXPECT_TRUE(reg.ok()) << reg.error().message();
  if (!reg) return s;
  s.api_key = reg->api_key;
  auto a = m.agent(reg->id);
  EXPECT_TRUE(a.ok());
  if (a) s.agent = *a;
  return s;
}

Parties registerParties(Market& m, int64_t cap) {
  return {registerScripted(m, Role::kBuyer, cap), registerScripted(m, Role::kSeller), registerScripted(m, Role::kJudge)};
}

SealedBody sealBody(const std::string& plaintext) {
  SealedBody b;
  b.key = keys::newSymmetricKey();
  b.ct_b64 = keys::toBase64(keys::secretSeal(b.key, plaintext));
  return b;
}

void DbTest::SetUp() {
  if (GetParam() == "postgres" && PgCluster::get() == nullptr) GTEST_SKIP() << PgCluster::why();
  tmp_ = std::make_unique<corral::testing::TempDir>("corral-market");
  if (::geteuid() == 0) (void)::chmod(tmp_->path().c_str(), 0755);
  env_ = makeEnv(freshDbUrl(GetParam(), *tmp_));
  ASSERT_NE(env_, nullptr);
}

}  // namespace corral::market::testing

namespace corral::market::testing {

std::string freshRunnerKey() { return keys::toHex(keys::newKeyPair().public_key); }

Result<Cycle> runCycle(Market& m, const Scripted& buyer, const Scripted& seller, const Scripted& judge,
                       const std::string& code, int64_t price, const std::string& plaintext) {
  const SealedBody body = sealBody(plaintext);
  ASSIGN_OR_RETURN(Task t, m.post(buyer.agent, {.title = "t", .category = "c", .model = "m", .max_price = price,
                                                .deadline = 4'000'000'000, .body_ct = body.ct_b64}));
  // The seller's runner: a key pair born for this claim.
  const keys::KeyPair runner = keys::newKeyPair();
  RETURN_IF_ERROR(m.claim(seller.agent, t.id, keys::toHex(runner.public_key)));
  ASSIGN_OR_RETURN(std::string wrap, keys::sealTo(runner.public_key, body.key));
  RETURN_IF_ERROR(m.releaseKey(buyer.agent, t.id, keys::toBase64(wrap)));
  // The runner opens the wrap and the body, and seals its answer to the buyer.
  ASSIGN_OR_RETURN(Task seen, m.task(t.id));
  ASSIGN_OR_RETURN(std::string wrap_raw, keys::fromBase64(seen.key_wrap));
  ASSIGN_OR_RETURN(std::string k, keys::openSealed(runner, wrap_raw));
  ASSIGN_OR_RETURN(std::string ct, keys::fromBase64(seen.body_ct));
  ASSIGN_OR_RETURN(std::string plain, keys::secretOpen(k, ct));
  const std::string r = keys::newSymmetricKey();
  ASSIGN_OR_RETURN(std::string r_wrap, keys::sealTo(buyer.kp.public_key, r));
  RETURN_IF_ERROR(m.submit(seller.agent, t.id, keys::toBase64(keys::secretSeal(r, "answer to " + plain)),
                           keys::toBase64(r_wrap)));
  const keys::KeyPair judge_runner = keys::newKeyPair();
  RETURN_IF_ERROR(m.claimReview(judge.agent, t.id, keys::toHex(judge_runner.public_key)));
  ASSIGN_OR_RETURN(std::string jwrap, keys::sealTo(judge_runner.public_key, body.key + r));
  RETURN_IF_ERROR(m.releaseJudgeKey(buyer.agent, t.id, keys::toBase64(jwrap)));
  RETURN_IF_ERROR(m.verdict(judge.agent, t.id, code));
  return Cycle{t.id, body.key};
}

}  // namespace corral::market::testing
