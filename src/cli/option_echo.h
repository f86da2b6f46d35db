// SPDX-License-Identifier: Apache-2.0
// How a subcommand echoes an option it does not know: the name only, never a value
// ("--api-key=sk-..." typed by mistake must not reach a terminal log), escaped and cut
// so the error stays one short line (policy::printable).
#pragma once

#include <string>
#include <string_view>

#include "policy/units.h"

namespace corral::cli {

inline std::string optionName(std::string_view arg) { return policy::printable(arg.substr(0, arg.find('='))); }

}  // namespace corral::cli
