// SPDX-License-Identifier: Apache-2.0
// Api: the /v1/ routes. Authenticates the bearer key, rate-limits per agent, parses the
// body strictly (market/request.h), runs the Market operation, renders the caller's view.
#pragma once

#include <string>
#include <utility>

#include "market/db_pool.h"
#include "market/http_server.h"
#include "market/market.h"

namespace corral::market {

inline constexpr int kContractVersion = 1;

struct ApiOptions {
  int64_t rate_per_minute = 600;
  // keys::hashApiKey of the admin token (--admin-token-file); empty: POST /v1/admin is 404.
  std::string admin_token_hash;
};

class Api {
 public:
  Api(DbPool& pool, const Config& cfg, ApiOptions opts) : pool_(pool), cfg_(cfg), opts_(std::move(opts)) {}
  HttpResponse handle(const HttpRequest& req);

 private:
  HttpResponse route(const HttpRequest& req, Market& m, std::string& agent_id, std::string& task_id);
  DbPool& pool_;
  const Config& cfg_;
  ApiOptions opts_;
};


}  // namespace corral::market
