// SPDX-License-Identifier: Apache-2.0
// PaymentProvider: holds, captures, releases, transfers and refunds, each idempotent.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "market/db.h"

namespace corral::market {

// One call per step of a manual-capture payment intent and a connected-account transfer, so
// a card processor's adapter maps each method onto one API request with the same
// idempotency key:
//   hold     -> create + confirm a payment intent, capture_method=manual, amount=max_price
//   capture  -> capture the intent (amount_to_capture=price; the rest is released)
//   release  -> cancel the intent
//   transfer -> a transfer of price - fee to the seller's connected account
//   refund   -> a refund of a captured intent (admin only)
// Every call may be repeated with its key after a crash: a repeat changes nothing and
// answers as the first call did.
class PaymentProvider {
 public:
  virtual ~PaymentProvider() = default;
  virtual std::string_view name() const = 0;
  // True when no real money moves; every API response says so.
  virtual bool testMode() const = 0;
  virtual Result<void> hold(const std::string& key, const std::string& buyer, const std::string& task, int64_t amount) = 0;
  virtual Result<void> capture(const std::string& key, const std::string& buyer, const std::string& task, int64_t held,
                               int64_t amount) = 0;
  virtual Result<void> release(const std::string& key, const std::string& buyer, const std::string& task, int64_t held) = 0;
  virtual Result<void> transfer(const std::string& key, const std::string& seller, const std::string& task, int64_t amount,
                                int64_t fee) = 0;
  virtual Result<void> refund(const std::string& key, const std::string& buyer, const std::string& seller,
                              const std::string& task, int64_t amount, int64_t fee) = 0;
};

// The built-in `ledger` provider: test mode, the money is entries in this database's
// ledger. Funding a buyer (at registration) moves external funding to buyer available.
std::unique_ptr<PaymentProvider> ledgerProvider(Db& db);

}  // namespace corral::market
