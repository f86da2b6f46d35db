// SPDX-License-Identifier: Apache-2.0
// `corral wasm` in corral-core: compile (or find in the cache), with the egress proxy for
// corral_http guests; the run itself is cli/wasm_run.cc, shared with the launcher.
#include "cli/wasm.h"

#include <cstdio>
#include <memory>

#include "cli/exec.h"
#include "cli/exec_options.h"
#include "cli/wasm_options.h"
#include "cli/wasm_run.h"
#include "wasm/compile.h"

namespace corral::cli {
namespace {

constexpr int kExitCorral = 125;

wasm::CompileOptions compileOptions(const WasmInvocation& inv) {
  wasm::CompileOptions o;
  o.cache = inv.cache;
  if (inv.compile_timeout) o.timeout = *inv.compile_timeout;
  return o;
}

int compileMain(const WasmInvocation& inv) {
  auto c = wasm::compileModule(inv.module, compileOptions(inv));
  if (!c) return wasmFail(c.error().message(), false);
  if (inv.json) {
    nlohmann::ordered_json j = {{"module_sha256", c->module_sha256}, {"key", c->key}, {"cache_hit", c->cache_hit},
                                {"compile_ms", c->compile_ms}, {"functions", c->info.functions},
                                {"largest_function_bytes", c->info.largest_function_bytes}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("compiled module_sha256=%s key=%s cache=%s compile_ms=%.1f\n", c->module_sha256.c_str(), c->key.c_str(),
                c->cache_hit ? "hit" : "miss", c->compile_ms);
  }
  return 0;
}

// corral_http goes through exec's --net proxy machinery unchanged: the same proxy, decisions,
// refusal lines, leases and report. The runner's environment stays empty (what the proxy would
// put there, the proxy variables and the lease placeholders, the runner needs none of: it is
// given the port and the lease names on its command line).
Result<std::unique_ptr<ExecEgress>> startHttpEgress(const WasmInvocation& inv, sandbox::SandboxSpec& spec) {
  ExecInvocation x;
  x.spec = spec;
  x.net_proxy = true;
  x.allow = inv.allow;
  x.internal = inv.internal;
  x.credentials = inv.credentials;
  x.lease_ca = inv.lease_ca;
  ASSIGN_OR_RETURN(std::unique_ptr<ExecEgress> egress, startExecEgress(x));
  spec.proxy = x.spec.proxy;
  return egress;
}

int runMain(const WasmInvocation& inv) {
  return wasmRunMain(inv, {.module = [](const WasmInvocation& i) -> Result<std::optional<wasm::Compiled>> {
                             ASSIGN_OR_RETURN(wasm::Compiled c, wasm::compileModule(i.module, compileOptions(i)));
                             return std::optional<wasm::Compiled>(std::move(c));
                           },
                           .start_egress = startHttpEgress,
                           .hand_off = [] { return kExitCorral; }});
}

}  // namespace

int wasmMain(const std::vector<std::string>& args) {
  auto parsed = parseWasmArgs(args);
  if (!parsed) return wasmFail(parsed.error().message(), false);
  switch (parsed->command) {
    case WasmInvocation::Command::kHelp: std::fputs(wasmUsage(), stdout); return 0;
    case WasmInvocation::Command::kCompile: return compileMain(*parsed);
    case WasmInvocation::Command::kRun: return runMain(*parsed);
  }
  return kExitCorral;
}

}  // namespace corral::cli
