// SPDX-License-Identifier: Apache-2.0
// The compile pipeline: read and scan a module, then wasm2c and the C compiler in a child
// inside the namespace sandbox, the shared object landing in the cache.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "base/result.h"
#include "wasm/cache_lookup.h"
#include "wasm/module_scan.h"

namespace corral::wasm {

struct CompileOptions {
  std::optional<std::string> cache;  // --cache
  ScanCaps caps;
  // The compile child's bounds: CPU seconds (RLIMIT_CPU), wall time (SIGKILL), address space
  // or cgroup memory, and the largest file it may write (RLIMIT_FSIZE).
  std::chrono::milliseconds cpu_time{60'000};
  std::chrono::milliseconds timeout{120'000};
  uint64_t memory_bytes = 2ull << 30;
  uint64_t output_bytes = 256ull << 20;
};


// Reads at most caps.module_bytes of path (a regular file), scans it and returns the cached
// shared object, compiling it first when the cache has none. Every refusal is an Error with
// one line; nothing is written to the cache unless the compile child succeeded.
Result<Compiled> compileModule(const std::string& path, const CompileOptions& options);

}  // namespace corral::wasm
