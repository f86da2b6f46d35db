// SPDX-License-Identifier: Apache-2.0
// `corral wasm` argument parsing: every option known, every value checked, nothing guessed.
#include "cli/wasm_options.h"

#include <algorithm>

#include "policy/env_policy.h"
#include "policy/units.h"

namespace corral::cli {
namespace {

Error invalid(const std::string& what) { return Error(Errc::kInvalidArgument, what); }

// HOST:GUEST (read-write), HOST:GUEST:rw (the same, spelled out) or HOST:GUEST:ro.
Result<WasmPreopen> parseDir(const std::string& v) {
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t colon = v.find(':', start);
    parts.push_back(v.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() < 2 || parts.size() > 3 || (parts.size() == 3 && parts[2] != "ro" && parts[2] != "rw"))
    return invalid("--dir " + policy::printable(v) + ": expected HOST:GUEST[:ro|:rw]");
  WasmPreopen p{parts[0], parts[1], parts.size() == 3 && parts[2] == "ro"};
  if (p.host.empty() || p.host.front() != '/') return invalid("--dir " + policy::printable(v) + ": HOST must be an absolute path");
  if (p.guest.empty() || p.guest.size() > 255) return invalid("--dir " + policy::printable(v) + ": GUEST must be 1 to 255 bytes");
  for (char c : p.host + p.guest)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return invalid("--dir: control characters in a path");
  return p;
}

// As exec's --allow: a refused URL may carry a token, so only the rule is echoed.
Result<void> addGrant(WasmInvocation& inv, const std::string& v) {
  auto grant = policy::egress::parseGrantReasonOnly(v);
  if (!grant) return invalid("--allow: " + grant.error().message() + " (URL not shown)");
  if (std::find(inv.allow.begin(), inv.allow.end(), *grant) != inv.allow.end())
    return invalid("--allow " + grant->text() + ": given twice");
  inv.allow.push_back(std::move(*grant));
  return {};
}

Result<void> addCredential(WasmInvocation& inv, const std::string& v) {
  ASSIGN_OR_RETURN(net::LeaseSpec spec, net::parseCredentialFlag(v));
  for (const net::LeaseSpec& other : inv.credentials) {
    if (other.name == spec.name) return invalid("--credential " + spec.name + ": given twice");
    if (other.env == spec.env)
      return invalid("--credential " + spec.name + ": variable " + spec.env + " already names credential " + other.name);
  }
  inv.credentials.push_back(std::move(spec));
  return {};
}

Result<void> checkNetwork(const WasmInvocation& inv) {
  if (!inv.internal.empty() && inv.allow.empty()) return invalid("--allow-internal needs an --allow grant by name");
  if (inv.lease_ca && inv.credentials.empty()) return invalid("--lease-ca needs --credential");
  return {};
}

}  // namespace

const char* wasmUsage() {
  return "usage: corral wasm compile [--cache DIR] [--compile-timeout D] [--json] MODULE.wasm\n"
         "       corral wasm run [options] MODULE.wasm [-- ARGS...]\n"
         "\n"
         "run options (nothing is granted by default):\n"
         "  --dir HOST:GUEST[:ro]  preopen HOST as GUEST, read-write or read-only (repeatable)\n"
         "  --env K=V              one environment variable for the guest (repeatable)\n"
         "  --allow URL            corral_http may reach scheme://host[:port] (repeatable)\n"
         "  --allow-internal CIDR  a granted name may resolve into this private range\n"
         "  --credential SPEC      NAME=ENVVAR@URL[;header=H;format=F]: a lease the proxy injects\n"
         "  --lease-ca FILE        CAs for lease upstreams (default: the system's)\n"
         "  --ca FILE              CAs for the guest's own https:// requests (default: the system's)\n"
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
                       (run && (opt == "--dir" || opt == "--env" || opt == "--memory" || opt == "--timeout" ||
                                opt == "--allow" || opt == "--allow-internal" || opt == "--credential" ||
                                opt == "--lease-ca" || opt == "--ca"));
    if (!known) return invalid("wasm " + args[0] + ": unknown option " + policy::printable(opt));
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
    } else if (opt == "--allow") {
      RETURN_IF_ERROR(addGrant(inv, *value));
    } else if (opt == "--allow-internal") {
      auto cidr = policy::egress::parseCidr(*value);
      if (!cidr) return invalid("--allow-internal: " + cidr.error().message());
      if (std::find(inv.internal.begin(), inv.internal.end(), *cidr) != inv.internal.end())
        return invalid("--allow-internal " + cidr->text() + ": given twice");
      inv.internal.push_back(*cidr);
    } else if (opt == "--credential") {
      RETURN_IF_ERROR(addCredential(inv, *value));
    } else if (opt == "--lease-ca") {
      if (inv.lease_ca) return invalid("--lease-ca: given twice");
      if (value->front() != '/') return invalid("--lease-ca: must be an absolute path");
      inv.lease_ca = *value;
    } else if (opt == "--ca") {
      if (inv.http_ca) return invalid("--ca: given twice");
      if (value->front() != '/') return invalid("--ca: must be an absolute path");
      inv.http_ca = *value;
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
  RETURN_IF_ERROR(checkNetwork(inv));
  if (i < args.size() && args[i] != "--") return invalid("wasm " + args[0] + ": unexpected " + policy::printable(args[i]) + " (guest arguments go after --)");
  if (i < args.size()) {
    if (!run) return invalid("wasm compile: takes no guest arguments");
    inv.args.assign(args.begin() + static_cast<long>(i) + 1, args.end());
  }
  return inv;
}

}  // namespace corral::cli
