// SPDX-License-Identifier: Apache-2.0
// `corral doctor`'s Wasm backend line: the toolchain, the cache and the guest runner.
#pragma once

#include <nlohmann/json.hpp>

namespace corral::cli {

// {"state": "ok"|"unavailable", "detail", "fix", "wasm2c": {path, version}, "cc": {path,
// version}, "cache": {path, state, detail}, "guest": path-or-null}. The versions are the first
// line each tool prints for --version, run inside a default sandbox as the compile child runs
// them; the cache is judged by the checks every run applies (wasm/cache.h) and never created.
nlohmann::json wasmState();

}  // namespace corral::cli
