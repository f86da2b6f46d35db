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

inline std::string optionName(std::string_view arg) { return policy::printable(arg.substr(0, arg.find('='))); }

// msg with every control byte (C0, DEL) written as \xNN, so a newline or an escape sequence
// in an echoed path cannot start a second line or drive the terminal; at most 2000 bytes.
inline std::string oneLine(std::string_view msg) {
  static constexpr char kHex[] = "0123456789abcdef";
  constexpr size_t kMax = 2000;
  std::string out;
  for (char c : msg.substr(0, kMax)) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  if (msg.size() > kMax) out += "...";
  return out;
}

}  // namespace corral::cli
