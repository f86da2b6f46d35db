// SPDX-License-Identifier: Apache-2.0
// The double-entry ledger: balanced transactions keyed by idempotency key, and its check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "market/db.h"

namespace corral::market::ledger {

// Account names. Only kExternalFunding may go below zero: it is the outside world.
inline constexpr const char* kExternalFunding = "external:funding";
inline constexpr const char* kPlatformFees = "platform:fees";
inline constexpr const char* kPlatformCaptured = "platform:captured";
std::string buyerAvailable(const std::string& agent);
std::string buyerHeld(const std::string& agent);
std::string sellerPayable(const std::string& agent);

struct Entry {
  std::string account;
  int64_t amount;  // cents; debits negative, credits positive
};

// Inside the caller's transaction. Returns true when this call applied the movement and
// false when its key was applied before (then nothing changes). Refuses an unbalanced
// set, and a movement that would take an account other than external funding below zero.
Result<bool> post(Db& tx, const std::string& key, const std::string& kind, const std::string& ref,
                  const std::vector<Entry>& entries, int64_t now);

// Whether a movement with this key exists.
Result<bool> applied(Db& db, const std::string& key);

struct CheckReport {
  int64_t transactions = 0;
  int64_t entries = 0;
  int64_t accounts = 0;
  std::vector<std::string> problems;  // one line each; empty means the ledger is sound
};
// Every transaction sums to zero with at least two entries; every account's balance equals
// the sum of its entries; no account but external funding is negative.
Result<CheckReport> check(Db& db);

struct AccountBalance {
  std::string account;
  int64_t balance;
};
Result<std::vector<AccountBalance>> balances(Db& db);
Result<int64_t> balance(Db& db, const std::string& account);

}  // namespace corral::market::ledger
