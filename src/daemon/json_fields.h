// SPDX-License-Identifier: Apache-2.0
// Strict reads of a JSON object: each field typed, unknown fields refused, nothing thrown.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace corral::daemon {

using Json = nlohmann::json;

// Parses text as one JSON value; malformed text or trailing bytes are an error, never a throw.
Result<Json> parseJson(std::string_view text);
// Compact and safe to print: bytes that are not UTF-8 are replaced, never a throw.
std::string dumpJson(const Json& j);

// The fields of one object, read by name. `where` prefixes every error ("body", "limits").
class Fields {
 public:
  static Result<Fields> of(const Json& j, std::string where, std::initializer_list<std::string_view> known);
  Result<std::optional<std::string>> string(std::string_view key, size_t max_bytes = 4096) const;
  Result<std::optional<uint64_t>> count(std::string_view key, uint64_t max) const;
  Result<std::optional<bool>> boolean(std::string_view key) const;
  // An array of strings, each at most max_bytes, at most max_items.
  Result<std::optional<std::vector<std::string>>> strings(std::string_view key, size_t max_items, size_t max_bytes = 4096) const;
  const Json* object(std::string_view key) const;  // nullptr when absent (of() checks the type)

 private:
  Fields(const Json* j, std::string where) : j_(j), where_(std::move(where)) {}
  const Json* find(std::string_view key) const;
  Error bad(std::string_view key, std::string_view want) const;
  const Json* j_;
  std::string where_;
};

}  // namespace corral::daemon
