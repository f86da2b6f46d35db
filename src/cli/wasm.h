// SPDX-License-Identifier: Apache-2.0
// `corral wasm compile|run`: WebAssembly guests behind the same sandbox as `exec`.
#pragma once

#include <string>
#include <vector>

namespace corral::cli {

int wasmMain(const std::vector<std::string>& args);

}  // namespace corral::cli
