// SPDX-License-Identifier: Apache-2.0
// Market test fixture: a private PostgreSQL cluster per test binary, a fresh database per
// test on either engine, and scripted agents.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "harness.h"
#include "market/db.h"
#include "market/keys.h"
#include "market/market.h"

namespace corral::market::testing {

// initdb + pg_ctl in a temp dir, as nobody when the test runs as root (PostgreSQL refuses
// root), listening on a Unix socket only. Started on first use, stopped at exit.
class PgCluster {
 public:
  static PgCluster* get();  // nullptr (with why()) when PostgreSQL's binaries are missing
  static const std::string& why();
  // A new, empty database; returns its postgresql:// URL.
  std::string newDatabase();
  ~PgCluster();

 private:
  PgCluster() = default;
  std::unique_ptr<corral::testing::TempDir> dir_;
  std::string socket_dir_, data_dir_;
  std::atomic<int> counter_{0};
};

// "sqlite" or "postgres": a fresh, migrated database URL for one test.
std::string freshDbUrl(const std::string& engine, const corral::testing::TempDir& tmp);

// A database, a ledger provider and a Market with a clock the test moves.
struct Env {
  std::string url;
  std::unique_ptr<Db> db;
  std::unique_ptr<PaymentProvider> provider;
  Config cfg;
  std::atomic<int64_t> clock{1'800'000'000};
  std::unique_ptr<Market> market;
};
std::unique_ptr<Env> makeEnv(const std::string& url);
// Another connection and Market over the same database (one per thread).
std::unique_ptr<Env> sameDb(const Env& env);

struct Scripted {
  Agent agent;
  std::string api_key;
  keys::KeyPair kp;
};
Scripted registerScripted(Market& m, Role role, int64_t cap = 0, bool approve_each = false);
// A buyer with `cap`, a seller and a judge.
struct Parties {
  Scripted buyer, seller, judge;
};
Parties registerParties(Market& m, int64_t cap);

// A task body sealed the way the buyer's client does it.
struct SealedBody {
  std::string key;     // K
  std::string ct_b64;  // what the server gets
};
SealedBody sealBody(const std::string& plaintext);

// Parameterised over engines; skips loudly when PostgreSQL is missing.
class DbTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;
  std::unique_ptr<corral::testing::TempDir> tmp_;
  std::unique_ptr<Env> env_;
};

#define MARKET_ENGINES(suite) INSTANTIATE_TEST_SUITE_P(Db, suite, ::testing::Values("sqlite", "postgres"), \
                                                       [](const auto& info) { return info.param; })

}  // namespace corral::market::testing

namespace corral::market::testing {

// The whole cycle as scripted agents run it: post a sealed body, claim with a fresh runner
// key, release K wrapped to it, submit a sealed result, review with a fresh judge key,
// verdict `code`. Each step's error is returned as it is.
struct Cycle {
  std::string task;
  std::string body_key;
};
Result<Cycle> runCycle(Market& m, const Scripted& buyer, const Scripted& seller, const Scripted& judge,
                       const std::string& code, int64_t price = 100, const std::string& plaintext = "task body");
std::string freshRunnerKey();  // hex of a new X25519 public key

}  // namespace corral::market::testing
