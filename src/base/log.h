// SPDX-License-Identifier: Apache-2.0
// key=value logging to stderr. Log ids, sizes, hashes, durations and decisions; never
// secrets, prompts, file contents or key material (Secret has no formatter, so it cannot
// be passed here).
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace corral::log {

enum class Level { kDebug, kInfo, kWarn, kError };

void setLevel(Level level);
bool enabled(Level level);
// A value for a "k=v" field: as it is when it is a plain token, otherwise in double quotes
// with '"', '\\' and control bytes escaped, so text from outside (a hostile SNI, a path in an
// error) can neither end the field early and add fields of its own nor break the line.
std::string value(std::string_view v);

// event is a snake_case name; fields are already formatted "k=v" pairs.
void write(Level level, std::string_view event, std::string_view fields = {});
inline void info(std::string_view event, std::string_view fields = {}) { write(Level::kInfo, event, fields); }
inline void warn(std::string_view event, std::string_view fields = {}) { write(Level::kWarn, event, fields); }
inline void error(std::string_view event, const Error& e) { write(Level::kError, event, "error=" + value(e.message())); }

}  // namespace corral::log
