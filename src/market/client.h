// SPDX-License-Identifier: Apache-2.0
// Client side of the market: an HTTP client for /v1/ (libcurl) and the identity file.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "market/keys.h"

namespace corral::market::client {

struct Identity {
  std::string agent_id, role, api_key;
  keys::KeyPair kp;  // secret_key empty when the agent keeps its own elsewhere
};

// Writes FILE with O_EXCL and mode 0600; refuses to overwrite.
Result<void> writeIdentity(const std::string& path, const Identity& id);
// Refuses a file that others can read (mode & 077).
Result<Identity> readIdentity(const std::string& path);

struct Response {  // NOLINT(bugprone-exception-escape): false positive from the nlohmann::json member's special members
  long status = 0;
  nlohmann::json body;
};

class Http {
 public:
  Http(std::string server, std::string api_key) : server_(std::move(server)), api_key_(std::move(api_key)) {}
  // TLS servers: the system CA store, or CORRAL_MARKET_CA (a PEM file) when set.
  Result<Response> get(const std::string& path) const;
  Result<Response> post(const std::string& path, const nlohmann::json& body) const;

 private:
  Result<Response> call(const char* method, const std::string& path, const std::string* body) const;
  std::string server_, api_key_;
};

// The task keys the buyer's client keeps: DIR/<task id>, mode 0600, one raw K each.
Result<void> saveTaskKey(const std::string& dir, const std::string& task, const std::string& key);
Result<std::string> loadTaskKey(const std::string& dir, const std::string& task);

}  // namespace corral::market::client
