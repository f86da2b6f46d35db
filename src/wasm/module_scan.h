// SPDX-License-Identifier: Apache-2.0
// The first look at an untrusted .wasm: size caps, then every import and export checked against
// a strict whitelist, before wasm2c ever reads the bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace corral::wasm {

// Why caps at all: gcc ran for over 400 s on a 1.2 MB module, and its time grows with the
// size of one function far faster than with the number of functions.
struct ScanCaps {
  uint64_t module_bytes = 8ull << 20;
  uint32_t functions = 20000;        // imported and defined together
  uint32_t function_bytes = 128u << 10;  // one function body
  uint32_t table_elements = 1u << 20;
};

struct MemoryDecl {
  uint32_t min_pages = 0;
  std::optional<uint32_t> max_pages;  // none: the module declared no maximum
};

struct ModuleInfo {
  std::vector<std::string> imports;  // "module.name", for reports
  std::vector<std::string> exports;
  std::optional<MemoryDecl> memory;  // the one defined memory
  uint32_t functions = 0;            // imported + defined
  uint32_t largest_function_bytes = 0;
  // The module as wasm2c gets it: every custom section dropped, so no name from a "name" or
  // "producers" section can reach the generated C.
  std::string stripped;
};

// An Error (kInvalidArgument or kLimit) is a one-line reason the module is refused; nothing
// in it echoes a name from the module other than through printableName().
Result<ModuleInfo> scanModule(std::string_view bytes, const ScanCaps& caps = {});

// A name from a module as it may appear in an error: printable ASCII, cut to 64 bytes.
std::string printableName(std::string_view name);

}  // namespace corral::wasm
