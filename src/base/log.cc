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
