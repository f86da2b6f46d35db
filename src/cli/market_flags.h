// SPDX-License-Identifier: Apache-2.0
// Flag parsing shared by the market subcommands: known flags only, values never echoed.
#pragma once

#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"

namespace corral::cli {

struct MarketFlags {
  std::map<std::string, std::string> values;
  std::set<std::string> bools;
  std::vector<std::string> positional;
  bool has(const std::string& f) const { return values.count(f) || bools.count(f); }
  std::string get(const std::string& f, const std::string& dflt = "") const {
    auto it = values.find(f);
    return it == values.end() ? dflt : it->second;
  }
};

// valued: "--db" style flags taking a value (--db X or --db=X); boolean: "--json".
Result<MarketFlags> parseMarketFlags(const std::vector<std::string>& args, std::initializer_list<const char*> valued,
                                     std::initializer_list<const char*> boolean, size_t max_positional = 0);
// A non-negative integer flag, or the default when absent.
Result<long long> intFlag(const MarketFlags& f, const std::string& name, long long dflt);

// The one line a failed market command prints (exit 125 unless the caller says otherwise).
int marketFail(const std::string& cmd, const std::string& why, bool json, int code = 125);

}  // namespace corral::cli
