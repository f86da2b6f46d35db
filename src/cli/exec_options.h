// SPDX-License-Identifier: Apache-2.0
// `corral exec` options: argv after "exec" parsed strictly into a SandboxSpec, no I/O.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "net/lease_spec.h"
#include "policy/egress_grant.h"
#include "policy/egress_internal.h"
#include "sandbox/spec.h"
#include "vm/vm_options.h"

namespace corral::cli {

struct ExecInvocation {
  sandbox::SandboxSpec spec;
  bool json = false;                       // --json: the JSON report on stderr
  std::optional<std::string> report_file;  // --report FILE: the JSON report to FILE
  bool timing = false;                     // --timing (undocumented): launch-phase breakdown
  bool help = false;                       // --help: print execUsage() and run nothing
  bool net_proxy = false;                  // --net proxy: egress through corral's proxy only
  std::vector<policy::egress::Grant> allow;  // --allow URL (needs --net proxy); empty: deny all
  std::vector<policy::egress::Cidr> internal;  // --allow-internal CIDR (needs --net proxy and an --allow)
  std::vector<net::LeaseSpec> credentials;   // --credential (needs --net proxy)
  std::optional<std::string> lease_ca;       // --lease-ca FILE: CAs for lease upstreams (default: system)
  // --upstream-proxy URL|env: the parent proxy (net/upstream_proxy.h), checked for syntax
  // here and read again by the proxy; --upstream-proxy-auth VAR: its user:password, from
  // corral's environment variable VAR.
  std::optional<std::string> upstream_proxy;
  std::optional<std::string> upstream_proxy_auth;
  // --ssh-key PATH: a host key file the sandbox's ssh-agent socket signs with (net/ssh_agent.h).
  std::optional<std::string> ssh_key;
  bool backend_vm = false;                   // --backend vm: a QEMU microVM (vm/vm_backend.h); ns: the default
  vm::VmOptions vm;                          // --vm-memory, --vm-cpus, --vm-kernel, --allow-weaker kvm
  bool vm_options_given = false;             // any --vm-* or --allow-weaker kvm: needs --backend vm
};

// Options end at "--" or at the first argument that does not start with '-'; the rest is
// the command (required). Both "--opt value" and "--opt=value" are accepted; a value may
// not be empty or start with "--" (use --opt=VALUE to pass one that does). Single-valued
// options may appear once. Paths are checked as strings only: --workspace may be
// relative, a --ro-bind HOST must already be absolute (the caller resolves and opens
// both). Every error is one line, prefixed by the option, and never echoes an --env
// value or an --allow URL (either may carry a secret).
Result<ExecInvocation> parseExecArgs(const std::vector<std::string>& args);

// The --help text: one line per documented option.
std::string execUsage();

}  // namespace corral::cli
