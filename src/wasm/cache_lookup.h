// SPDX-License-Identifier: Apache-2.0
// Read, scan and hash a module, and find its trusted cache entry: everything a run does
// before it would compile. Shared by corral-core (compile.h, on a miss it compiles) and the
// `corral` launcher (which serves hits itself and hands misses to corral-core).
#pragma once

#include <optional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "wasm/module_scan.h"

namespace corral::wasm {

// Which import modules the module uses: wasm2c's instantiate takes one instance per module.
struct ImportModules {
  bool wasi = false, http = false;
  std::string defines() const;
};

struct Compiled {
  std::string so_path;        // the trusted cache entry's shared object
  std::string module_sha256;  // of the module as given
  std::string key;            // the cache key
  bool cache_hit = false;
  double compile_ms = 0;      // 0 on a hit
  ModuleInfo info;
};

struct Lookup {
  Compiled module;  // so_path set and cache_hit true on a hit; otherwise what a compile needs
  ImportModules imports;
  UniqueFd root;           // the cache root, opened and judged (cache.h)
  std::string root_path;   // resolved, naming the directory root was opened as
};

// Reads at most caps.module_bytes of path (a regular file), scans it, computes its key and
// opens the cache (`cache`: --cache). An Error is a one-line refusal: a bad module, an
// untrusted root or entry. A miss is a Lookup whose module.cache_hit is false.
Result<Lookup> lookupModule(const std::string& path, const std::optional<std::string>& cache, const ScanCaps& caps);

// cc's flags for wasm2c's output (the -D flags follow the import modules). -O3, not -O2:
// 0.85x -> 0.93x native on bench/wasm/cpu.c for 0-27 % more compile time and no change at the
// 128 KiB function cap (docs/benchmarks-wasm.md, session 20).
inline constexpr char kCcFlags[] = "-O3 -fPIC -shared -w";
// The compile flags as the key records them.
std::string compileFlags(const ImportModules& m);

}  // namespace corral::wasm
