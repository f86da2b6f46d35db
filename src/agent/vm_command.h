// SPDX-License-Identifier: Apache-2.0
// The `run` tool on the microVM backend (sandbox.backend "vm", `corral run --backend vm`): the
// backend chosen and checked once at load, then each gated command's SandboxSpec through
// vm::runVm, the same path `corral exec --backend vm` takes.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/sandbox_command.h"
#include "base/result.h"
#include "policy/manifest.h"
#include "vm/vm_options.h"

namespace corral::agent {

struct BackendFlags {
  std::optional<std::string> backend;  // --backend namespace|vm
  bool allow_kvm = false;              // --allow-weaker kvm
  bool session = false;                // --session ID
};

struct VmChoice {
  vm::VmOptions options;
  std::string accelerator;  // "kvm" or "tcg", as the probe found it at load
};

// The backend of the run's commands: nullopt for namespaces. A flag may choose the VM over
// namespaces (a narrower boundary), never namespaces over a manifest's VM, and may accept TCG
// only for a VM it chose itself. An Error (exit 125, before anything is written): an option
// the VM backend cannot honour in a run, a VM backend this host cannot start (no QEMU, no
// agent, KVM unusable without kvm accepted).
Result<std::optional<VmChoice>> chooseBackend(const policy::Manifest& m, const BackendFlags& flags);

struct VmCommandOutcome {  // NOLINT(bugprone-exception-escape): false positive from the nlohmann::json member's special members
  CommandOutcome outcome;  // kept stays empty: only declared outputs come back from a guest
  nlohmann::json vm;       // accelerator, start, kernel_release, guest_kernel
};

// Runs spec (gated argv, no stage_only) in a fresh VM, stdin /dev/null, stdout/stderr into a
// capture of keep_bytes per stream; declared outputs come back into spec.workspace through
// copy-back's checks. An Error: the VM could not be started (the command never ran).
Result<VmCommandOutcome> runInVm(const sandbox::SandboxSpec& spec, const vm::VmOptions& options, uint64_t keep_bytes);

}  // namespace corral::agent
