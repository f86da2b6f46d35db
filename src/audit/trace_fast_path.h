// SPDX-License-Identifier: Apache-2.0
// A single-pass recogniser for trace lines that are already in the exact canonical form the
// writer produces, so `corral verify` runs near SHA-256 speed instead of parsing every line
// into a DOM and re-serialising it. It only ever says "certainly valid, and these are the
// header fields"; anything it is unsure about (a non-ASCII or escaped key, a long string,
// any deviation) returns nullopt and the caller takes the strict slow path, which stays the
// reference for acceptance and for every error message.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace corral::audit {

struct FastTraceHeader {
  uint64_t seq = 0;
  std::string_view prev;  // 64 lowercase hex, a view into the line
};

// nullopt: not proven canonical here (the slow path decides). A value: the line is exactly
// {"data":<object>,"prev":"<64 hex>","seq":N,"ts_ms":N,"type":"<type>","v":1} in canonical
// form, with every string in data at most kMaxTraceStringBytes and nesting within kMaxJsonDepth.
std::optional<FastTraceHeader> fastTraceLine(std::string_view line);

}  // namespace corral::audit
