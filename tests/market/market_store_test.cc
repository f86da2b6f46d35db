// SPDX-License-Identifier: Apache-2.0
// Storage and ledger, on SQLite and PostgreSQL: migrations, balanced idempotent movements,
// and `ledger check` catching every kind of damage (market.ledger-balanced).
#include <thread>

#include "market/ledger.h"
#include "market/schema.h"
#include "market_fixture.h"

namespace corral::market::testing {
namespace {

using ledger::Entry;

class MarketSchema : public DbTest {};
MARKET_ENGINES(MarketSchema);

TEST_P(MarketSchema, FirstTableIsTheVersionAndMigrateIsIdempotent) {
  auto v = env_->db->exec("SELECT MAX(version) FROM schema_version");
  ASSERT_TRUE(v.ok()) << v.error().message();
  ASSERT_EQ(v->rows.size(), 1u);
  EXPECT_EQ(v->num(0, 0), kSchemaVersion);
  auto again = migrate(*env_->db);
  ASSERT_TRUE(again.ok()) << again.error().message();
  auto v2 = env_->db->exec("SELECT COUNT(*) FROM schema_version");
  EXPECT_EQ(v2->num(0, 0), kSchemaVersion) << "a second migrate must apply nothing";
}

TEST_P(MarketSchema, RefusesADatabaseNewerThanThisBinary) {
  ASSERT_TRUE(env_->db->exec("INSERT INTO schema_version (version) VALUES (99)").ok());
  auto r = migrate(*env_->db);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("newer"), std::string::npos) << r.error().message();
}

TEST_P(MarketSchema, ConcurrentMigrationsFromTwoConnectionsAgree) {
  // A fresh database, migrated by two connections at once (two servers starting together).
  const std::string url = freshDbUrl(GetParam(), *tmp_);
  auto a = openDb(url);
  auto b = openDb(url);
  ASSERT_TRUE(a.ok() && b.ok());
  Result<int> ra = 0, rb = 0;
  std::thread t([&] { ra = migrate(**a); });
  rb = migrate(**b);
  t.join();
  ASSERT_TRUE(ra.ok()) << ra.error().message();
  ASSERT_TRUE(rb.ok()) << rb.error().message();
  EXPECT_EQ((*a)->exec("SELECT COUNT(*) FROM schema_version")->num(0, 0), kSchemaVersion);
}

class MarketLedgerBalanced : public DbTest {
 protected:
  Result<bool> post(const std::string& key, std::vector<Entry> e) {
    Result<bool> out = false;
    auto r = inTransaction(*env_->db, [&](Db& tx) -> Result<void> {
      out = ledger::post(tx, key, "test", "ref", e, 1);
      if (!out) return out.error();
      return {};
    });
    if (!r) return r.error();
    return out;
  }
  ledger::CheckReport check() {
    auto c = ledger::check(*env_->db);
    EXPECT_TRUE(c.ok());
    return c.ok() ? *c : ledger::CheckReport{};
  }
};
MARKET_ENGINES(MarketLedgerBalanced);

TEST_P(MarketLedgerBalanced, ReplayedIdempotencyKeyMovesNothing) {
  auto first = post("k1", {{ledger::kExternalFunding, -500}, {"buyer:x:available", 500}});
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_TRUE(*first);
  auto again = post("k1", {{ledger::kExternalFunding, -500}, {"buyer:x:available", 500}});
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again) << "a replay must be recognised";
  EXPECT_EQ(*ledger::balance(*env_->db, "buyer:x:available"), 500) << "market.ledger-balanced: replay moved money twice";
  EXPECT_TRUE(check().problems.empty());
}

TEST_P(MarketLedgerBalanced, UnbalancedAndOverdrawnMovementsAreRefusedWhole) {
  EXPECT_FALSE(post("u", {{ledger::kExternalFunding, -500}, {"buyer:x:available", 499}}).ok());
  EXPECT_FALSE(post("one", {{ledger::kExternalFunding, 0}}).ok());
  // Overdraw: the second leg would take buyer:x:available below zero; nothing of it stays.
  EXPECT_FALSE(post("over", {{"buyer:x:available", -1}, {"buyer:x:held", 1}}).ok());
  auto n = env_->db->exec("SELECT COUNT(*) FROM ledger_txns");
  EXPECT_EQ(n->num(0, 0), 0);
  EXPECT_EQ(*ledger::balance(*env_->db, "buyer:x:held"), 0);
}

TEST_P(MarketLedgerBalanced, CheckFindsEveryKindOfDamage) {
  ASSERT_TRUE(post("k1", {{ledger::kExternalFunding, -500}, {"buyer:x:available", 500}}).ok());
  ASSERT_TRUE(post("k2", {{"buyer:x:available", -200}, {"buyer:x:held", 200}}).ok());
  // Control: the sound ledger passes.
  auto sound = check();
  EXPECT_TRUE(sound.problems.empty()) << sound.problems.front();
  EXPECT_EQ(sound.transactions, 2);
  EXPECT_EQ(sound.entries, 4);
  // A balance edited behind the ledger's back.
  ASSERT_TRUE(env_->db->exec("UPDATE accounts SET balance = balance + 1 WHERE id = 'buyer:x:held'").ok());
  EXPECT_EQ(check().problems.size(), 1u);
  ASSERT_TRUE(env_->db->exec("UPDATE accounts SET balance = balance - 1 WHERE id = 'buyer:x:held'").ok());
  // An entry changed: the transaction no longer sums to zero (and the account drifts too).
  ASSERT_TRUE(env_->db->exec("UPDATE ledger_entries SET amount = 201 WHERE txn = 'k2' AND seq = 1").ok());
  EXPECT_GE(check().problems.size(), 2u);
  ASSERT_TRUE(env_->db->exec("UPDATE ledger_entries SET amount = 200 WHERE txn = 'k2' AND seq = 1").ok());
  // An entry without its transaction.
  ASSERT_TRUE(env_->db->exec("DELETE FROM ledger_txns WHERE id = 'k1'").ok());
  EXPECT_FALSE(check().problems.empty());
}

}  // namespace
}  // namespace corral::market::testing
