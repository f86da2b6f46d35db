// SPDX-License-Identifier: Apache-2.0
// Strict option scanning for the daemon's client subcommands (daemon, session): known
// options only, "--opt value" or "--opt=value", single-valued ones at most once.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace corral::cli {

struct OptionSpec {
  std::string_view name;  // "--memory"
  bool takes_value;
  bool repeatable = false;
};

struct ScannedArgs {
  std::multimap<std::string, std::string> opts;  // flags map to ""
  std::vector<std::string> positional;           // up to max_positional
  std::vector<std::string> rest;                 // after "--", or from the positional past max_positional
  bool has(std::string_view name) const { return opts.count(std::string(name)) > 0; }
  std::string get(std::string_view name) const;  // "" when absent
  std::vector<std::string> all(std::string_view name) const;
};

// Errors never echo a value (an --env value may be a secret), only the option's name.
Result<ScannedArgs> scanArgs(const std::vector<std::string>& args, const std::vector<OptionSpec>& known, size_t max_positional);

}  // namespace corral::cli
