// SPDX-License-Identifier: Apache-2.0
// stderr logger.
#include "base/log.h"

#include <unistd.h>

#include <atomic>

namespace corral::log {
namespace {
std::atomic<Level> g_level{Level::kWarn};
const char* name(Level l) {
  switch (l) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
  }
  return "?";
}
}  // namespace

std::string value(std::string_view v) {
  bool plain = !v.empty();
  for (char c : v) {
    const auto u = static_cast<unsigned char>(c);
    plain = plain && u > 0x20 && u < 0x7f && c != '"' && c != '\\' && c != '=';
  }
  if (plain) return std::string(v);
  std::string out = "\"";
  for (char c : v) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

void setLevel(Level level) { g_level = level; }
bool enabled(Level level) { return level >= g_level.load(); }

void write(Level level, std::string_view event, std::string_view fields) {
  if (!enabled(level)) return;
  std::string line = "corral: level=";
  line += name(level);
  line += " event=";
  line += event;
  if (!fields.empty()) {
    line += ' ';
    line += fields;
  }
  line += '\n';
  // One write(2) per line so concurrent writers never interleave inside a line.
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace corral::log
