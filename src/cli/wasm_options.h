// SPDX-License-Identifier: Apache-2.0
// `corral wasm compile|run` arguments, parsed strictly into a typed invocation.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "net/lease_spec.h"
#include "policy/egress_grant.h"
#include "policy/egress_internal.h"

namespace corral::cli {

struct WasmPreopen {
  std::string host;   // absolute host directory
  std::string guest;  // the path the guest sees
  bool read_only = true;
};

struct WasmInvocation {
  enum class Command { kHelp, kCompile, kRun } command = Command::kHelp;
  std::string module;
  std::optional<std::string> cache;
  bool json = false;
  std::vector<WasmPreopen> dirs;
  std::vector<std::string> env;  // "K=V", validated
  // corral_http: grants, internal CIDRs and leases for the run's egress proxy (as exec's
  // --net proxy; a module that imports corral_http always gets a proxy, granting nothing
  // without --allow).
  std::vector<policy::egress::Grant> allow;
  std::vector<policy::egress::Cidr> internal;
  std::vector<net::LeaseSpec> credentials;
  std::optional<std::string> lease_ca;
  std::optional<std::string> http_ca;  // --ca: CAs for the guest's https:// requests without a lease
  uint64_t memory_bytes = 256ull << 20;
  std::optional<std::chrono::milliseconds> timeout;
  std::optional<std::chrono::milliseconds> compile_timeout;
  std::vector<std::string> args;  // after "--": the guest's arguments (argv[0] is the module's name)
};

// Errors are one line, prefixed by the option, and never echo an --env value or an --allow URL.
Result<WasmInvocation> parseWasmArgs(const std::vector<std::string>& args);
const char* wasmUsage();

}  // namespace corral::cli
