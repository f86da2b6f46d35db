// SPDX-License-Identifier: Apache-2.0
// How the CLI echoes what a user typed. An unknown option: the name only, never a value
// ("--api-key=sk-..." typed by mistake must not reach a terminal log), escaped and cut
// (policy::printable). Any message on stderr: one line, whatever a path or argument in it
// holds (oneLine).
#pragma once

#include <string>
#include <string_view>

#include "policy/units.h"

namespace corral::cli {

inline std::string optionName(std::string_view arg) {
  return policy::oneLine(policy::printable(arg.substr(0, arg.find('='))));
}

// Any message on stderr: one line whatever a path or argument in it holds.
inline std::string oneLine(std::string_view msg) { return policy::oneLine(msg); }

}  // namespace corral::cli
