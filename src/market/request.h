// SPDX-License-Identifier: Apache-2.0
// Strict parsers for the market's request bodies: JSON objects with known fields only,
// typed and bounded. Pure (no I/O), so fuzz_market_requests can drive them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <initializer_list>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "market/market.h"

namespace corral::market::request {

// One JSON object whose keys are all in `allowed`, each at most once.
Result<nlohmann::json> strictObject(std::string_view body, std::initializer_list<const char*> allowed);
Result<std::string> stringField(const nlohmann::json& j, const char* field, size_t min, size_t max);
Result<int64_t> intField(const nlohmann::json& j, const char* field, int64_t min, int64_t max);

// Errors are statusError(400, fixed text naming a field): never the request's values.
Result<NewTask> parsePost(std::string_view body);
Result<std::string> parseRunnerKey(std::string_view body);  // {"runner_key": hex}
Result<std::string> parseWrap(std::string_view body);       // {"wrap": base64}
struct Submission {
  std::string result_ct, result_key_wrap;
};
Result<Submission> parseSubmit(std::string_view body);
Result<std::string> parseVerdict(std::string_view body);    // {"reason": code}
Result<void> parseEmpty(std::string_view body);             // "" or {}

// "/v1/tasks/t_0123456789abcdef/claim" -> {"t_0123456789abcdef", "claim"}. Ids are
// [a-z]_[0-9a-f]{16}; anything else is no route.
struct Route {
  std::string collection;  // "tasks", "me", "appeals", "reason-codes", "health"
  std::string id;
  std::string action;
};
Result<Route> parseTarget(std::string_view target);
bool validId(std::string_view id, char prefix);

}  // namespace corral::market::request
