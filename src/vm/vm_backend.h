// SPDX-License-Identifier: Apache-2.0
// The microVM backend: runs one SandboxSpec in a QEMU microvm whose guest agent runs the
// command in corral's namespace sandbox, with QEMU itself jailed in one (docs/vm.md).
#pragma once

#include <memory>

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

// A guest kept up for a daemon session (docs/daemon.md, "Sessions on the VM backend"): booted
// or restored once, with the session's sandbox up in it (the agent's session mode), and its
// control channel the caller's from then on. Destroying it kills QEMU and removes the run
// directory; QEMU also dies with the thread that started it (PR_SET_PDEATHSIG).
class SessionVm {
 public:
  struct State;
  explicit SessionVm(std::unique_ptr<State> s);
  SessionVm(const SessionVm&) = delete;
  SessionVm& operator=(const SessionVm&) = delete;
  ~SessionVm();
  int control() const;   // the channel: session-mode frames (frame.h) both ways
  int pidfd() const;     // the QEMU jailer's pidfd: readable once the VM is gone
  int pid() const;       // the jailer's pid
  const nlohmann::ordered_json& info() const;  // accelerator, start (cold or restore), timings
  void kill();           // QEMU killed now
  // QMP stop / cont on QEMU's monitor (the guest's vCPUs and clock stand still), and whether it
  // runs. From one thread at a time.
  Result<void> pause();
  Result<void> resume();
  Result<bool> running();

 private:
  std::unique_ptr<State> s_;
};

// spec: the session's environment and limits (argv and outputs unused); its workspace is a
// blank disk of spec.limits.workspace_bytes. An Error: nothing is left running.
Result<std::unique_ptr<SessionVm>> startSessionVm(const sandbox::SandboxSpec& spec, const VmOptions& vm);

// The guest agent binary installed beside corral (corral-vm-init).
Result<std::string> agentPath();

}  // namespace corral::vm
