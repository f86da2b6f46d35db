// SPDX-License-Identifier: Apache-2.0
// `corral market serve`: migrate, recover, then the HTTP API, the admin socket and the sweep.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace corral::market {

struct ServeOptions {
  std::string db_url;
  std::string listen = "127.0.0.1:8470";
  std::string tls_cert, tls_key;
  std::string admin_socket;  // default: beside a SQLite file, else ./corral-market-admin.sock
  std::string admin_token_file;  // optional: enables POST /v1/admin with this bearer token
  int64_t fee_bps = 1000;
  int64_t suspend_after_strikes = 3;
  int64_t claim_seconds = 600;
  int64_t rate_per_minute = 600;
  int64_t sweep_seconds = 5;
  int pool_size = 8;
};

// Prints "corral market: listening on ADDR:PORT admin=PATH test_mode=ledger" on stdout once
// both sockets accept, then serves until SIGTERM or SIGINT.
Result<void> serve(const ServeOptions& opts);

std::string defaultAdminSocket(const std::string& db_url);
// The admin token from FILE: a regular file of mode 0600 or tighter, 32..200 printable bytes.
Result<std::string> readAdminToken(const std::string& path);

}  // namespace corral::market
