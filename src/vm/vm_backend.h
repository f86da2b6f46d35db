// SPDX-License-Identifier: Apache-2.0
// The microVM backend: runs one SandboxSpec in a QEMU microvm whose guest agent runs the
// command in corral's namespace sandbox, with QEMU itself jailed in one (docs/vm.md).
#pragma once

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "sandbox/spec.h"
#include "vm/vm_options.h"

namespace corral::vm {

struct VmRun {  // NOLINT(bugprone-exception-escape): false positive from the nlohmann::json member's special members
  sandbox::RunReport report;
  nlohmann::ordered_json extra;  // "backend" and "vm" (accelerator, size, kernel, boot times, guest devices)
};

// An Error: corral refused or failed before the command ran (exit 125), nothing left behind.
// Otherwise report.exit_code is what corral exits with, as for the namespace backend.
Result<VmRun> runVm(const sandbox::SandboxSpec& spec, const VmOptions& vm);

// The guest agent binary installed beside corral (corral-vm-init).
Result<std::string> agentPath();

}  // namespace corral::vm
