// SPDX-License-Identifier: Apache-2.0
// The admin socket: a Unix socket where only the server's own uid (or root), checked with
// SO_PEERCRED, registers agents, sets caps, suspends, reinstates and settles appeals.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "base/unique_fd.h"
#include "market/db_pool.h"
#include "market/market.h"

namespace corral::market {

// One JSON object per connection, one JSON answer back. Pure: the command's parse and
// execution, so tests and the fuzz target can drive it without a socket.
std::string adminExecute(Market& m, std::string_view request_json);

class AdminSocket {
 public:
  static Result<std::unique_ptr<AdminSocket>> start(const std::string& path, DbPool& pool, const Config& cfg);
  ~AdminSocket();

 private:
  AdminSocket(UniqueFd fd, std::string path, DbPool& pool, const Config& cfg)
      : fd_(std::move(fd)), path_(std::move(path)), pool_(pool), cfg_(cfg) {}
  void loop();
  UniqueFd fd_;
  std::string path_;
  DbPool& pool_;
  const Config& cfg_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace corral::market
