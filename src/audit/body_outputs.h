// SPDX-License-Identifier: Apache-2.0
// result.json's body.outputs: the one part of the body verify interprets, read strictly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace corral::audit {

// One entry of body.outputs, as docs/audit-format.md section 3.1 defines it.
struct BodyOutput {
  std::string path;                // normal form (isNormalOutputPath)
  std::string sha256;              // "" when the run left no such file
  std::optional<std::string> applied;  // "copied", "refused", "withheld" or "missing" (--apply only)
  std::optional<bool> changed;
  std::optional<uint64_t> bytes;
};

// One spelling per path: relative, components joined by single '/', none empty, "." or "..",
// none over 255 bytes, at most 4096 bytes in all, valid UTF-8 without control bytes, and not
// beneath ".corral". So "./x", "a/../x" and "a//x" are refused, never resolved.
bool isNormalOutputPath(std::string_view path);

// Reads body.outputs (absent: none). Never throws: every member is type-checked first. An
// error (kInvalidArgument) is one line naming the entry: "body.outputs[2].path is not ...".
Result<std::vector<BodyOutput>> parseBodyOutputs(const nlohmann::json& body);

}  // namespace corral::audit
