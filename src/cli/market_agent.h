// SPDX-License-Identifier: Apache-2.0
// The market's admin and buyer commands (cli/market_admin.cc, cli/market_agent.cc).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "cli/market_flags.h"
#include "market/client.h"

namespace corral::cli {

// An agent's connection: its identity (from --key-file, never argv) and an HTTP client.
struct MarketSession {
  market::client::Identity id;
  std::string key_dir;  // FILE.keys/: the task keys a buyer made
  market::client::Http http;
};
Result<MarketSession> marketSession(const MarketFlags& f);
// The answer's body, or "server said STATUS: message" for a 4xx/5xx.
Result<nlohmann::json> marketOk(Result<market::client::Response> r);

int marketAdminMain(const std::vector<std::string>& args);
// sub: post, buyer, tasks, result.

int marketAgentMain(const std::string& sub, const std::vector<std::string>& args);
// `corral market seller|judge` (cli/market_runner.cc) and the helper inside their sandbox
// (cli/market_sandbox.cc).
int marketRunnerMain(const std::string& sub, const std::vector<std::string>& args);
int marketSandboxMain(const std::vector<std::string>& args);
}  // namespace corral::cli
