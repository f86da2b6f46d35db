// SPDX-License-Identifier: Apache-2.0
// The `run` tool's execution: one gated argv in a fresh namespace sandbox built from the
// manifest (the same SandboxSpec `corral exec` builds from flags), with the run's private
// workspace as /workspace, stdin /dev/null, stdout/stderr captured and capped.
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "agent/output_capture.h"
#include "agent/private_workspace.h"
#include "agent/workspace_mirror.h"
#include "base/result.h"
#include "policy/manifest.h"
#include "sandbox/spec.h"

namespace corral::agent {

struct CommandOutcome {
  int exit_code = 125;            // as `corral exec` would exit
  std::optional<int> status;      // the command's own exit status
  std::optional<int> signal;
  std::string killed_by;          // "none", "timeout", "memory", ...
  double wall_ms = 0;
  CapturedOutput output;
  std::vector<sandbox::OutputResult> outputs;  // declared outputs copied back into the private workspace
  std::optional<MirrorStats> kept;  // keep_into: what of /workspace was kept for the next command
};

// The manifest's sandbox limits (and allow_weaker) onto spec.limits, as commandSpec does.
Result<void> applyManifestLimits(const policy::Manifest& m, sandbox::SandboxSpec& spec);

// The SandboxSpec for argv (already gated): base environment + manifest env + gate env,
// manifest sandbox limits, the given timeout. whole_workspace: /workspace is the whole private
// workspace (the root task, whose view it is: what it declared and what its own commands
// made); otherwise only what m declares (a spawned task's narrowed view).
Result<sandbox::SandboxSpec> commandSpec(const policy::Manifest& m, const PrivateWorkspace& ws,
                                         const std::vector<std::string>& argv,
                                         const std::vector<std::string>& gate_env,
                                         std::chrono::milliseconds timeout, bool whole_workspace = false);

// Runs it. An Error means the sandbox could not be built (the command never ran). With
// keep_into (a directory fd: the private workspace), /workspace as the command left it is
// mirrored there when it exits normally (agent/workspace_mirror.h).
Result<CommandOutcome> runSandboxed(sandbox::SandboxSpec spec, uint64_t keep_bytes, int keep_into = -1);

}  // namespace corral::agent
