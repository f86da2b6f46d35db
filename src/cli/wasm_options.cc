// SPDX-License-Identifier: Apache-2.0
// `corral wasm` argument parsing: every option known, every value checked, nothing guessed.
#include "cli/wasm_options.h"

#include "policy/env_policy.h"
#include "policy/units.h"

namespace corral::cli {
namespace {

Error invalid(const std::string& what) { return Error(Errc::kInvalidArgument, what); }

// HOST:GUEST[:ro]. Only read-only preopens exist so far: a read-write one is refused rather
// than silently made read-only.
Result<WasmPreopen> parseDir(const std::string& v) {
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t colon = v.find(':', start);
    parts.push_back(v.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() < 2 || parts.size() > 3) return invalid("--dir " + policy::printable(v) + ": expected HOST:GUEST[:ro]");
  if (parts.size() == 2 || parts[2] != "ro")
    return invalid("--dir " + policy::printable(v) + ": read-write preopens are not supported yet; add :ro");
  WasmPreopen p{parts[0], parts[1]};
  if (p.host.empty() || p.host.front() != '/') return invalid("--dir " + policy::printable(v) + ": HOST must be an absolute path");
  if (p.guest.empty() || p.guest.size() > 255) return invalid("--dir " + policy::printable(v) + ": GUEST must be 1 to 255 bytes");
  for (char c : p.host + p.guest)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return invalid("--dir: control characters in a path");
  return p;
}

}  // namespace

const char* wasmUsage() {
  return "usage: corral wasm compile [--cache DIR] [--compile-timeout D] [--json] MODULE.wasm\n"
         "       corral wasm run [options] MODULE.wasm [-- ARGS...]\n"
         "\n"
         "run options (nothing is granted by default):\n"
         "  --dir HOST:GUEST:ro    preopen HOST read-only as GUEST (repeatable)\n"
         "  --env K=V              one environment variable for the guest (repeatable)\n"
         "  --memory SIZE          the most linear memory the guest may have (default 256M)\n"
         "  --timeout D            SIGKILL the guest after D (exit 124)\n"
         "  --cache DIR            the compiled-module cache (docs/wasm.md)\n"
         "  --compile-timeout D    bound the compile child's wall time (default 120s)\n"
         "  --json                 the JSON report on stderr\n"
         "exit: the guest's status; 132 on a trap; 124 timeout; 125 corral refused or failed\n";
}

Result<WasmInvocation> parseWasmArgs(const std::vector<std::string>& args) {
  WasmInvocation inv;
  if (args.empty() || args[0] == "--help" || args[0] == "-h") return inv;
  if (args[0] == "compile") inv.command = WasmInvocation::Command::kCompile;
  else if (args[0] == "run") inv.command = WasmInvocation::Command::kRun;
  else return invalid("wasm: unknown subcommand " + policy::printable(args[0]) + " (compile or run)");
  const bool run = inv.command == WasmInvocation::Command::kRun;
  bool seen_memory = false, seen_timeout = false;
  size_t i = 1;
  for (; i < args.size(); ++i) {
    std::string opt = args[i];
    if (opt == "--") break;
    if (opt.rfind("--", 0) != 0) {
      if (!inv.module.empty()) break;
      inv.module = opt;
      continue;
    }
    std::optional<std::string> value;
    if (size_t eq = opt.find('='); eq != std::string::npos) {
      value = opt.substr(eq + 1);
      opt.resize(eq);
    }
    if (opt == "--json" && !value) {
      inv.json = true;
      continue;
    }
    if (opt == "--help" && !value) {
      inv.command = WasmInvocation::Command::kHelp;
      return inv;
    }
    const bool known = opt == "--cache" || opt == "--compile-timeout" ||
                       (run && (opt == "--dir" || opt == "--env" || opt == "--memory" || opt == "--timeout"));
    if (!known) {
      if (run && (opt == "--allow" || opt == "--credential"))
        return invalid(opt + ": corral_http is not implemented yet (issue 22); a guest has no network");
      return invalid("wasm " + args[0] + ": unknown option " + policy::printable(opt));
    }
    if (!value) {
      if (i + 1 >= args.size()) return invalid(opt + ": needs a value");
      value = args[++i];
    }
    if (value->empty()) return invalid(opt + ": empty value");
    if (opt == "--cache") {
      if (inv.cache) return invalid("--cache: given twice");
      inv.cache = *value;
    } else if (opt == "--compile-timeout") {
      ASSIGN_OR_RETURN(auto d, policy::parseDuration(*value));
      inv.compile_timeout = d;
    } else if (opt == "--dir") {
      ASSIGN_OR_RETURN(WasmPreopen p, parseDir(*value));
      inv.dirs.push_back(std::move(p));
      if (inv.dirs.size() > 32) return invalid("--dir: at most 32");
    } else if (opt == "--env") {
      auto kv = policy::env::parseAssignment(*value);
      if (!kv) return kv.error().wrap("--env");
      inv.env.push_back(kv->first + "=" + kv->second);
    } else if (opt == "--memory") {
      if (seen_memory) return invalid("--memory: given twice");
      seen_memory = true;
      auto size = policy::parseSize(*value);
      if (!size) return size.error().wrap("--memory");
      if (*size < 65536 || *size > (4ull << 30))
        return invalid("--memory " + policy::printable(*value) + ": must be between 64K and 4G");
      inv.memory_bytes = *size;
    } else if (opt == "--timeout") {
      if (seen_timeout) return invalid("--timeout: given twice");
      seen_timeout = true;
      auto d = policy::parseDuration(*value);
      if (!d) return d.error().wrap("--timeout");
      inv.timeout = *d;
    }
  }
  if (inv.module.empty()) return invalid("wasm " + args[0] + ": MODULE.wasm is required");
  if (i < args.size() && args[i] != "--") return invalid("wasm " + args[0] + ": unexpected " + policy::printable(args[i]) + " (guest arguments go after --)");
  if (i < args.size()) {
    if (!run) return invalid("wasm compile: takes no guest arguments");
    inv.args.assign(args.begin() + static_cast<long>(i) + 1, args.end());
  }
  return inv;
}

}  // namespace corral::cli
