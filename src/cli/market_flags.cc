// SPDX-License-Identifier: Apache-2.0
// parseMarketFlags and the one-line failure printer.
#include "cli/market_flags.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/option_echo.h"

namespace corral::cli {

Result<MarketFlags> parseMarketFlags(const std::vector<std::string>& args, std::initializer_list<const char*> valued,
                                     std::initializer_list<const char*> boolean, size_t max_positional) {
  MarketFlags f;
  auto is = [](std::initializer_list<const char*> set, const std::string& n) {
    for (const char* s : set)
      if (n == s) return true;
    return false;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      if (f.positional.size() >= max_positional) return Error(Errc::kInvalidArgument, "unexpected argument " + optionName(a));
      f.positional.push_back(a);
      continue;
    }
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    if (is(boolean, name) && eq == std::string::npos) {
      f.bools.insert(name);
    } else if (is(valued, name)) {
      if (eq != std::string::npos) {
        f.values[name] = a.substr(eq + 1);
      } else if (i + 1 < args.size()) {
        f.values[name] = args[++i];
      } else {
        return Error(Errc::kInvalidArgument, name + " needs a value");
      }
    } else {
      return Error(Errc::kInvalidArgument, "unknown option " + optionName(a));
    }
  }
  return f;
}

Result<long long> intFlag(const MarketFlags& f, const std::string& name, long long dflt) {
  if (!f.values.count(name)) return dflt;
  const std::string& v = f.values.at(name);
  if (v.empty() || v.size() > 15 || v.find_first_not_of("0123456789") != std::string::npos)
    return Error(Errc::kInvalidArgument, name + " must be a non-negative integer");
  return std::stoll(v);
}

int marketFail(const std::string& cmd, const std::string& why, bool json, int code) {
  if (json) {
    std::fprintf(stderr, "%s\n", nlohmann::json({{"ok", false}, {"command", cmd}, {"error", oneLine(why)}}).dump().c_str());
  } else {
    std::fprintf(stderr, "corral: market %s: %s\n", cmd.c_str(), oneLine(why).c_str());
  }
  return code;
}

}  // namespace corral::cli
