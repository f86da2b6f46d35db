// SPDX-License-Identifier: Apache-2.0
// The market's admin and buyer commands (cli/market_admin.cc, cli/market_agent.cc).
#pragma once

#include <string>
#include <vector>

namespace corral::cli {
int marketAdminMain(const std::vector<std::string>& args);
// sub: post, buyer, tasks, result.
int marketAgentMain(const std::string& sub, const std::vector<std::string>& args);
}  // namespace corral::cli
