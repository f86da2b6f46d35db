// SPDX-License-Identifier: Apache-2.0
// Sizes ("64M") and durations ("1.5s") as users write them on flags and in manifests.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace corral::policy {

// Bytes: a decimal integer with an optional K, M, G or T suffix (binary, 1K = 1024;
// "KiB"/"MB" spellings accepted as the same). Zero, signs, spaces, overflow and junk are errors.
Result<uint64_t> parseSize(std::string_view text);

// A non-negative decimal with a unit: ms, s, m or h ("250ms", "1.5s", "2m"). A bare number
// is seconds. Zero, negatives, overflow past a year and junk are errors.
Result<std::chrono::milliseconds> parseDuration(std::string_view text);

// A positive decimal integer no larger than max.
Result<uint64_t> parseCount(std::string_view text, uint64_t max);

// User text as it may appear inside a one-line error message: control bytes and backslash
// escaped (\n, \x00, \\), long text cut to about 120 bytes with "...". Error messages
// echo hostile input, and a newline or NUL in one would forge or hide a second line.
std::string printable(std::string_view text);

// Text as it may appear on one line of a terminal, uncut (up to 2000 bytes, then "..."):
// C0 controls and DEL as \xNN, bytes that are not UTF-8 as \xNN, and the code points a
// terminal or a reader could be steered by (C1 controls, line and paragraph separators,
// bidi controls) as \u{XXXX}. Everything else passes unchanged.
std::string oneLine(std::string_view text);

}  // namespace corral::policy
