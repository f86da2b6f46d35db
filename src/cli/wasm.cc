// SPDX-License-Identifier: Apache-2.0
// `corral wasm` glue: compile (or find in the cache), then run corral-wasm-guest on the
// shared object inside the namespace sandbox, and report as `exec` does.
#include "cli/wasm.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>

#include "cli/launcher.h"
#include "cli/report_json.h"
#include "cli/wasm_options.h"
#include "policy/units.h"
#include "sandbox/linux_backend.h"
#include "wasm/compile.h"
#include "wasm/trap_status.h"

namespace corral::cli {
namespace {

constexpr int kExitCorral = 125;
constexpr uint64_t kPage = 65536;
constexpr char kGuestBinary[] = "/opt/corral-wasm/guest";
// The cache entry is staged in as /workspace (a private copy in the sandbox's tmpfs), not
// bound: the sandbox's uid need not be able to reach the cache, which is 0700.
constexpr char kGuestModule[] = "/workspace/module.so";

int fail(const std::string& message, bool json) {
  std::fprintf(stderr, "corral: %s\n", policy::oneLine(message).c_str());
  if (json) {
    sandbox::RunReport r;
    r.error = message;
    std::fprintf(stderr, "%s\n", renderReport(r).c_str());
  }
  return kExitCorral;
}

// corral-wasm-guest sits beside corral-core, as corral-core sits beside corral.
Result<std::string> guestBinaryPath() {
  ASSIGN_OR_RETURN(std::string core, coreBinaryPath());  // ".../corral-core" beside this binary's dir
  std::string guest = core.substr(0, core.rfind('/') + 1) + "corral-wasm-guest";
  struct stat st {};
  if (::stat(guest.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return sysError("cannot find " + guest);
  return guest;
}

wasm::CompileOptions compileOptions(const WasmInvocation& inv) {
  wasm::CompileOptions o;
  o.cache = inv.cache;
  if (inv.compile_timeout) o.timeout = *inv.compile_timeout;
  return o;
}

int compileMain(const WasmInvocation& inv) {
  auto c = wasm::compileModule(inv.module, compileOptions(inv));
  if (!c) return fail(c.error().message(), false);
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

// The module's own maximum must fit --memory: a module that declares it needs more is refused
// up front, not left to fail at its first memory.grow.
Result<uint32_t> memoryPages(const wasm::ModuleInfo& info, uint64_t memory_bytes) {
  const uint32_t limit = static_cast<uint32_t>(memory_bytes / kPage);
  const wasm::MemoryDecl& m = *info.memory;
  if (m.max_pages && *m.max_pages > limit)
    return Error(Errc::kRefused, "module declares a memory maximum of " + std::to_string(*m.max_pages) + " pages (" +
                                     std::to_string((uint64_t{*m.max_pages} * kPage) >> 20) + " MiB), more than --memory allows (" +
                                     std::to_string(limit) + " pages)");
  if (m.min_pages > limit)
    return Error(Errc::kRefused, "module needs " + std::to_string(m.min_pages) + " pages of memory at start, more than --memory allows (" +
                                     std::to_string(limit) + " pages)");
  return limit;
}

std::string baseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

int runMain(const WasmInvocation& inv) {
  for (const WasmPreopen& d : inv.dirs) {
    struct stat st {};
    if (::stat(d.host.c_str(), &st) != 0) return fail(sysError("--dir " + d.host).message(), inv.json);
    if (!S_ISDIR(st.st_mode)) return fail("--dir " + d.host + ": not a directory", inv.json);
  }
  auto guest = guestBinaryPath();
  if (!guest) return fail(guest.error().message(), inv.json);
  auto c = wasm::compileModule(inv.module, compileOptions(inv));
  if (!c) return fail(c.error().message(), inv.json);
  auto pages = memoryPages(c->info, inv.memory_bytes);
  if (!pages) return fail(pages.error().message(), inv.json);

  sandbox::SandboxSpec spec;
  spec.argv = {kGuestBinary, kGuestModule, std::to_string(*pages)};
  spec.ro_binds = {{*guest, kGuestBinary}};
  spec.workspace = c->so_path.substr(0, c->so_path.rfind('/'));
  for (size_t i = 0; i < inv.dirs.size(); ++i) {
    const std::string at = "/opt/corral-wasm/dir" + std::to_string(i);
    spec.ro_binds.push_back({inv.dirs[i].host, at});
    spec.argv.insert(spec.argv.end(), {"--dir", at, inv.dirs[i].guest});
  }
  for (const std::string& kv : inv.env) spec.argv.insert(spec.argv.end(), {"--env", kv});
  spec.argv.emplace_back("--");
  spec.argv.push_back(baseName(inv.module));
  spec.argv.insert(spec.argv.end(), inv.args.begin(), inv.args.end());
  // The runner's own environment is empty: the guest's comes from --env via argv above.
  spec.env = {};
  spec.limits.timeout = inv.timeout;
  spec.limits.pids = 8;  // one guest process; a guest cannot fork

  auto report = sandbox::runLinux(spec, {});
  if (!report) return fail(report.error().message(), inv.json);
  sandbox::RunReport r = *report;
  const char* trap = nullptr;
  if (r.command_status && r.killed_by == sandbox::KilledBy::kNone) {
    if (*r.command_status == wasm::kHostFailureStatus) {
      r.exit_code = kExitCorral;
      r.error = "the wasm guest process failed before or while running the module (its line above says why)";
    } else if ((trap = wasm::trapKind(*r.command_status))) {
      r.exit_code = wasm::kExitTrap;
    }
  }
  if (!r.error.empty()) std::fprintf(stderr, "corral: %s\n", policy::oneLine(r.error).c_str());
  if (inv.json) {
    nlohmann::ordered_json extra = {{"backend", "wasm"}, {"module_sha256", c->module_sha256},
                                    {"cache", c->cache_hit ? "hit" : "miss"}, {"compile_ms", c->compile_ms},
                                    {"memory_pages", *pages}, {"trap", trap ? nlohmann::ordered_json(trap) : nullptr}};
    std::fprintf(stderr, "%s\n", renderReport(r, &extra).c_str());
  }
  return r.exit_code;
}

}  // namespace

int wasmMain(const std::vector<std::string>& args) {
  auto parsed = parseWasmArgs(args);
  if (!parsed) return fail(parsed.error().message(), false);
  switch (parsed->command) {
    case WasmInvocation::Command::kHelp: std::fputs(wasmUsage(), stdout); return 0;
    case WasmInvocation::Command::kCompile: return compileMain(*parsed);
    case WasmInvocation::Command::kRun: return runMain(*parsed);
  }
  return kExitCorral;
}

}  // namespace corral::cli
