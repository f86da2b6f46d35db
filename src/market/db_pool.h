// SPDX-License-Identifier: Apache-2.0
// DbPool: a fixed set of connections (each with its ledger provider), lent one per request.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "market/db.h"
#include "market/provider.h"

namespace corral::market {

class DbPool {
 public:
  struct Conn {
    std::unique_ptr<Db> db;
    std::unique_ptr<PaymentProvider> provider;
  };
  class Lease {
   public:
    Lease(DbPool& pool, Conn* c) : pool_(pool), c_(c) {}
    ~Lease() { pool_.giveBack(c_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Db& db() { return *c_->db; }
    PaymentProvider& provider() { return *c_->provider; }

   private:
    DbPool& pool_;
    Conn* c_;
  };

  static Result<std::unique_ptr<DbPool>> open(const std::string& url, int size);
  Lease acquire();  // waits for a free connection

 private:
  void giveBack(Conn* c);
  std::vector<std::unique_ptr<Conn>> all_;
  std::vector<Conn*> free_;
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace corral::market
