// SPDX-License-Identifier: Apache-2.0
// `corral wasm run`: run corral-wasm-guest on a cached shared object inside the namespace
// sandbox, and report as `exec` does. corral-core and the launcher both run this code.
#include "cli/wasm_run.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "cli/launcher.h"
#include "cli/report_json.h"
#include "policy/units.h"
#include "sandbox/linux_backend.h"
#include "wasm/trap_status.h"
#include "wasm/wasi_imports.h"

namespace corral::cli {
namespace {

constexpr int kExitCorral = 125;
constexpr uint64_t kPage = 65536;
constexpr char kGuestBinary[] = "/opt/corral-wasm/guest";
// The cache entry is staged in as /workspace (a private copy in the sandbox's tmpfs), not
// bound: the sandbox's uid need not be able to reach the cache, which is 0700.
constexpr char kGuestModule[] = "/workspace/module.so";

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

bool importsHttp(const wasm::ModuleInfo& info) {
  for (const std::string& i : info.imports)
    if (i.starts_with(std::string(wasm::kHttpModule) + ".")) return true;
  return false;
}

std::string baseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Egress of any kind is corral-core's: the proxy is linked there only.
bool needsCore(const WasmInvocation& inv) {
  return inv.command != WasmInvocation::Command::kRun || !inv.allow.empty() || !inv.internal.empty() ||
         !inv.credentials.empty() || inv.lease_ca || inv.http_ca;
}

}  // namespace

// corral-wasm-guest sits beside corral-core, as corral-core sits beside corral.
Result<std::string> wasmGuestBinaryPath() {
  ASSIGN_OR_RETURN(std::string core, coreBinaryPath());  // ".../corral-core" beside this binary's dir
  std::string guest = core.substr(0, core.rfind('/') + 1) + "corral-wasm-guest";
  struct stat st {};
  if (::stat(guest.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return sysError("cannot find " + guest);
  return guest;
}

int wasmFail(const std::string& message, bool json) {
  std::fprintf(stderr, "corral: %s\n", policy::oneLine(message).c_str());
  if (json) {
    sandbox::RunReport r;
    r.error = message;
    std::fprintf(stderr, "%s\n", renderReport(r).c_str());
  }
  return kExitCorral;
}

int wasmRunMain(const WasmInvocation& inv, const WasmRunEnvironment& env) {
  for (const WasmPreopen& d : inv.dirs) {
    struct stat st {};
    if (::stat(d.host.c_str(), &st) != 0) return wasmFail(sysError("--dir " + d.host).message(), inv.json);
    if (!S_ISDIR(st.st_mode)) return wasmFail("--dir " + d.host + ": not a directory", inv.json);
  }
  auto guest = wasmGuestBinaryPath();
  if (!guest) return wasmFail(guest.error().message(), inv.json);
  auto found = env.module(inv);
  if (!found) return wasmFail(found.error().message(), inv.json);
  if (!*found) return env.hand_off();  // the launcher's miss: corral-core compiles
  const wasm::Compiled& c = **found;
  const bool http = importsHttp(c.info);
  if (http && !env.start_egress) return env.hand_off();
  auto pages = memoryPages(c.info, inv.memory_bytes);
  if (!pages) return wasmFail(pages.error().message(), inv.json);
  // A grant the guest cannot use is a mistake worth naming, as exec's --allow without a proxy.
  if (!http && (!inv.allow.empty() || !inv.credentials.empty() || inv.http_ca))
    return wasmFail(std::string(!inv.allow.empty() ? "--allow" : !inv.credentials.empty() ? "--credential" : "--ca") +
                        ": the module imports nothing from corral_http",
                    inv.json);

  sandbox::SandboxSpec spec;
  spec.argv = {kGuestBinary, kGuestModule, std::to_string(*pages)};
  spec.ro_binds = {{*guest, kGuestBinary}};
  spec.workspace = c.so_path.substr(0, c.so_path.rfind('/'));
  // Read-only preopens are bound read-only; read-write ones beneath /workspace, the one tree
  // Landlock leaves writable (the guest reaches neither but through its preopen fd).
  for (size_t i = 0; i < inv.dirs.size(); ++i) {
    const WasmPreopen& d = inv.dirs[i];
    const std::string at = (d.read_only ? "/opt/corral-wasm/dir" : "/workspace/dir-rw") + std::to_string(i);
    if (d.read_only) spec.ro_binds.push_back({d.host, at});
    else spec.rw_binds.push_back({d.host, at});
    spec.argv.insert(spec.argv.end(), {d.read_only ? "--dir" : "--dir-rw", at, d.guest});
  }
  for (const std::string& kv : inv.env) spec.argv.insert(spec.argv.end(), {"--env", kv});
  if (http && inv.http_ca) {
    struct stat st {};
    if (::stat(inv.http_ca->c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      return wasmFail("--ca " + *inv.http_ca + ": not a regular file", inv.json);
    spec.ro_binds.push_back({*inv.http_ca, "/opt/corral-wasm/ca.pem"});
    spec.argv.insert(spec.argv.end(), {"--ca", "/opt/corral-wasm/ca.pem"});
  }
  if (http) {
    spec.argv.insert(spec.argv.end(), {"--proxy", std::to_string(spec.proxy.port)});
    for (const net::LeaseSpec& l : inv.credentials) spec.argv.insert(spec.argv.end(), {"--lease", l.name, l.grant.text()});
  }
  spec.argv.emplace_back("--");
  spec.argv.push_back(baseName(inv.module));
  spec.argv.insert(spec.argv.end(), inv.args.begin(), inv.args.end());
  // The runner's own environment is empty: the guest's comes from --env via argv above.
  spec.env = {};
  spec.limits.timeout = inv.timeout;
  spec.limits.pids = 8;  // one guest process; a guest cannot fork

  std::unique_ptr<ExecEgress> egress;
  if (http) {
    auto started = env.start_egress(inv, spec);
    if (!started) return wasmFail("corral_http: " + started.error().message(), inv.json);
    egress = std::move(*started);
  }
  auto report = sandbox::runLinux(spec, {});
  if (!report) {
    if (egress) (void)egress->stop();
    return wasmFail(report.error().message(), inv.json);
  }
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
  // After the trap check: a proxy that died mid-run fails the run whatever the guest did.
  if (egress) {
    if (auto stopped = egress->stop(); !stopped) {
      r.error = "corral_http: " + stopped.error().message();
      r.exit_code = kExitCorral;
    }
  }
  if (!r.error.empty()) std::fprintf(stderr, "corral: %s\n", policy::oneLine(r.error).c_str());
  if (inv.json) {
    nlohmann::ordered_json extra = {{"backend", "wasm"}, {"module_sha256", c.module_sha256},
                                    {"cache", c.cache_hit ? "hit" : "miss"}, {"compile_ms", c.compile_ms},
                                    {"memory_pages", *pages}, {"trap", trap ? nlohmann::ordered_json(trap) : nullptr}};
    if (egress) egress->addToReport(extra);
    std::fprintf(stderr, "%s\n", renderReport(r, &extra).c_str());
  }
  return r.exit_code;
}

int wasmLauncherMain(const std::vector<std::string>& args, const std::function<int()>& hand_off) {
  // A bad command line is corral-core's to refuse: the same parser, one place that words it.
  auto parsed = parseWasmArgs(args);
  if (!parsed || needsCore(*parsed)) return hand_off();
  return wasmRunMain(*parsed, {.module = [](const WasmInvocation& inv) -> Result<std::optional<wasm::Compiled>> {
                                 ASSIGN_OR_RETURN(wasm::Lookup l, wasm::lookupModule(inv.module, inv.cache, wasm::ScanCaps{}));
                                 if (!l.module.cache_hit) return std::optional<wasm::Compiled>();
                                 return std::optional<wasm::Compiled>(std::move(l.module));
                               },
                               .start_egress = {},
                               .hand_off = hand_off});
}

}  // namespace corral::cli
