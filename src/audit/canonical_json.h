// SPDX-License-Identifier: Apache-2.0
// Canonical JSON (RFC 8785 for our subset): the byte form every hash and signature covers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace corral::audit {

// Integers only, and only those an RFC 8785 (IEEE double) implementation prints exactly, so
// any conforming canonicalizer reproduces our bytes.
inline constexpr int64_t kMaxSafeInteger = (int64_t{1} << 53) - 1;
// Nesting cap: at most this many arrays and objects nested one in another (the outermost is
// level 1; scalars add no level). The serializer recurses, and the record nests a few deep.
inline constexpr int kMaxJsonDepth = 32;

// Object keys sorted by UTF-16 code units, no whitespace, minimal string escapes
// (\" \\ \b \f \n \r \t, other controls as \u00xx), everything else raw UTF-8.
// Refuses floats, integers beyond +-kMaxSafeInteger, invalid UTF-8, binary values and
// nesting deeper than kMaxJsonDepth (Errc::kInvalidArgument).
Result<std::string> canonicalJson(const nlohmann::json& value);

// Parses any JSON text with nlohmann, refusing nesting deeper than max_depth and, when
// refuse_duplicates, a key repeated within one object (nlohmann would keep the last silently,
// so two readers could read two different documents from one text). Errors
// (Errc::kInvalidArgument) give at most a byte offset, never the input.
Result<nlohmann::json> parseJsonChecked(std::string_view text, int max_depth, bool refuse_duplicates);

// Parses text that must already be canonical: duplicate keys, floats, invalid UTF-8,
// whitespace, escapes spelled differently and any other deviation are errors. Messages
// give byte offsets and never echo the input.
Result<nlohmann::json> parseCanonicalJson(std::string_view text);

// True when s is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool isValidUtf8(std::string_view s);

}  // namespace corral::audit
