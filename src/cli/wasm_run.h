// SPDX-License-Identifier: Apache-2.0
// `corral wasm run` from a module's cache entry to the report, shared by corral-core and the
// `corral` launcher. What only corral-core has (the compiler pipeline, the egress proxy) comes
// in through WasmRunEnvironment, as exec's ExecEnvironment does for exec's.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "cli/exec.h"
#include "cli/wasm_options.h"
#include "sandbox/spec.h"
#include "wasm/cache_lookup.h"

namespace corral::cli {

struct WasmRunEnvironment {
  // The module's trusted cache entry: corral-core compiles on a miss (wasm::compileModule);
  // the launcher only looks (wasm::lookupModule), and a miss (nullopt) is handed off.
  std::function<Result<std::optional<wasm::Compiled>>(const WasmInvocation&)> module;
  // corral_http's egress proxy (corral-core). Empty in the launcher: such a run is handed off.
  std::function<Result<std::unique_ptr<ExecEgress>>(const WasmInvocation&, sandbox::SandboxSpec&)> start_egress;
  // The launcher's hand-off to corral-core, with argv unchanged (returns on failure only).
  std::function<int()> hand_off;
};

int wasmRunMain(const WasmInvocation& inv, const WasmRunEnvironment& env);

// The launcher's `corral wasm ...`: a run it can serve completely (parsed, no --allow,
// --allow-internal, --credential, --lease-ca or --ca, a cached module that imports nothing
// from corral_http) runs here; everything else goes to hand_off before anything ran.
int wasmLauncherMain(const std::vector<std::string>& args, const std::function<int()>& hand_off);

// corral-wasm-guest, beside corral-core (found through /proc/self/exe, never PATH).
Result<std::string> wasmGuestBinaryPath();

// One "corral: " line on stderr and, with --json, a report holding only the error; 125.
int wasmFail(const std::string& message, bool json);

}  // namespace corral::cli
