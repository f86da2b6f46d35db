// SPDX-License-Identifier: Apache-2.0
// Option scanning shared by `corral daemon` and `corral session`.
#include "cli/daemon_args.h"

#include "cli/option_echo.h"

namespace corral::cli {

std::string ScannedArgs::get(std::string_view name) const {
  auto it = opts.find(std::string(name));
  return it == opts.end() ? std::string() : it->second;
}

std::vector<std::string> ScannedArgs::all(std::string_view name) const {
  std::vector<std::string> out;
  auto [b, e] = opts.equal_range(std::string(name));
  for (auto it = b; it != e; ++it) out.push_back(it->second);
  return out;
}

Result<ScannedArgs> scanArgs(const std::vector<std::string>& args, const std::vector<OptionSpec>& known, size_t max_positional) {
  ScannedArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      out.rest.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      if (out.positional.size() < max_positional) {
        out.positional.push_back(a);
        continue;
      }
      out.rest.assign(args.begin() + static_cast<long>(i), args.end());
      break;
    }
    const std::string name = a.substr(0, a.find('='));
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& k : known)
      if (k.name == name) spec = &k;
    if (!spec) return Error(Errc::kInvalidArgument, "unknown option " + optionName(a));
    if (!spec->repeatable && out.has(name)) return Error(Errc::kInvalidArgument, name + " given twice");
    std::string value;
    if (spec->takes_value) {
      if (a.size() > name.size()) {
        value = a.substr(name.size() + 1);
      } else {
        if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0) return Error(Errc::kInvalidArgument, name + " needs a value");
        value = args[++i];
      }
      if (value.empty()) return Error(Errc::kInvalidArgument, name + " needs a value");
    } else if (a.size() > name.size()) {
      return Error(Errc::kInvalidArgument, name + " takes no value");
    }
    out.opts.emplace(name, value);
  }
  return out;
}

}  // namespace corral::cli
