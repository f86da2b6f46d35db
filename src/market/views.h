// SPDX-License-Identifier: Apache-2.0
// What each party may see of a task: metadata for all, sealed fields only to its parties.
#pragma once

#include <nlohmann/json.hpp>

#include "market/market.h"

namespace corral::market {

// Invariant: ciphertext and wraps appear only in the buyer's, the claiming seller's and the
// reviewing judge's view, each only what that party needs.
nlohmann::json taskView(const Task& t, const Agent& viewer);
nlohmann::json agentView(const Agent& a);
nlohmann::json reasonCodesView();

}  // namespace corral::market
