// SPDX-License-Identifier: Apache-2.0
// Standard base64 (RFC 4648 section 4, with padding): how result.json spells a signature.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace corral::audit {

std::string base64Encode(std::string_view bytes);
// Strict: the standard alphabet, correct padding, no whitespace, and zero unused bits, so
// every byte string has exactly one accepted spelling. nullopt otherwise.
std::optional<std::string> base64DecodeStrict(std::string_view text);

}  // namespace corral::audit
