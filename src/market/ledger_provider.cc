// SPDX-License-Identifier: Apache-2.0
// The `ledger` payment provider: each provider call is one balanced ledger transaction.
#include <ctime>

#include "market/ledger.h"
#include "market/provider.h"

namespace corral::market {
namespace {

using ledger::Entry;

class LedgerProvider final : public PaymentProvider {
 public:
  explicit LedgerProvider(Db& db) : db_(db) {}
  std::string_view name() const override { return "ledger"; }
  bool testMode() const override { return true; }

  // An authorization on the buyer's (test-mode) balance: refused when it is short, as a
  // card processor declines.
  Result<void> hold(const std::string& key, const std::string& buyer, const std::string& task, int64_t amount) override {
    return move(key, "hold", task,
                {{ledger::buyerAvailable(buyer), -amount}, {ledger::buyerHeld(buyer), amount}});
  }
  Result<void> capture(const std::string& key, const std::string& buyer, const std::string& task, int64_t held,
                       int64_t amount) override {
    if (amount > held || amount < 0) return Error(Errc::kInvalidArgument, "capture above the hold");
    return move(key, "capture", task,
                {{ledger::buyerHeld(buyer), -held},
                 {ledger::buyerAvailable(buyer), held - amount},
                 {ledger::kPlatformCaptured, amount}});
  }
  Result<void> release(const std::string& key, const std::string& buyer, const std::string& task, int64_t held) override {
    return move(key, "release", task, {{ledger::buyerHeld(buyer), -held}, {ledger::buyerAvailable(buyer), held}});
  }
  Result<void> transfer(const std::string& key, const std::string& seller, const std::string& task, int64_t amount,
                        int64_t fee) override {
    return move(key, "transfer", task,
                {{ledger::kPlatformCaptured, -amount},
                 {ledger::sellerPayable(seller), amount - fee},
                 {ledger::kPlatformFees, fee}});
  }
  Result<void> refund(const std::string& key, const std::string& buyer, const std::string& seller,
                      const std::string& task, int64_t amount, int64_t fee) override {
    return move(key, "refund", task,
                {{ledger::sellerPayable(seller), -(amount - fee)},
                 {ledger::kPlatformFees, -fee},
                 {ledger::buyerAvailable(buyer), amount}});
  }

 private:
  Result<void> move(const std::string& key, const char* kind, const std::string& ref, std::vector<Entry> entries) {
    // Zero-amount legs (a capture of the whole hold) are dropped; the rest must balance.
    std::vector<Entry> legs;
    for (auto& e : entries)
      if (e.amount != 0) legs.push_back(std::move(e));
    return inTransaction(db_, [&](Db& tx) -> Result<void> {
      auto r = ledger::post(tx, key, kind, ref, legs, static_cast<int64_t>(std::time(nullptr)));
      if (!r) return r.error();
      return {};
    });
  }
  Db& db_;
};

}  // namespace

std::unique_ptr<PaymentProvider> ledgerProvider(Db& db) { return std::make_unique<LedgerProvider>(db); }

}  // namespace corral::market
