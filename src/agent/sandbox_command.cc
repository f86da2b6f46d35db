// SPDX-License-Identifier: Apache-2.0
#include "agent/sandbox_command.h"

#include <fcntl.h>

#include "policy/env_policy.h"
#include "sandbox/linux_backend.h"

namespace corral::agent {

Result<void> applyManifestLimits(const policy::Manifest& m, sandbox::SandboxSpec& spec) {
  const policy::SandboxLimitsSpec& l = m.sandbox;
  spec.limits.memory_bytes = l.memory_bytes;
  if (l.pids) spec.limits.pids = *l.pids;
  spec.limits.cpu_time = l.cpu_time;
  if (l.file_size_bytes) spec.limits.file_size_bytes = *l.file_size_bytes;
  if (l.tmp_bytes) spec.limits.tmp_bytes = *l.tmp_bytes;
  if (l.workspace_bytes) spec.limits.workspace_bytes = *l.workspace_bytes;
  for (const std::string& name : l.allow_weaker) {
    if (name == "kvm") continue;  // the VM's accelerator, not a limit: VmOptions.allow_tcg (vm_command.cc)
    auto limit = sandbox::limitFromName(name);
    if (!limit) return Error(Errc::kInvalidArgument, "sandbox.allow_weaker: unknown limit " + name);
    spec.limits.allow_weaker.push_back(*limit);
  }
  return {};
}

Result<sandbox::SandboxSpec> commandSpec(const policy::Manifest& m, const PrivateWorkspace& ws,
                                         const std::vector<std::string>& argv,
                                         const std::vector<std::string>& gate_env,
                                         std::chrono::milliseconds timeout, bool whole_workspace) {
  sandbox::SandboxSpec spec;
  spec.argv = argv;
  std::vector<std::pair<std::string, std::string>> extra;
  // A gated command (git) starts from a clean environment plus the gate's pins, and takes
  // from the manifest's env only an allowlist: GIT_* (GIT_DIR, GIT_CONFIG_COUNT/KEY_n/VALUE_n,
  // GIT_EXEC_PATH, ...) could undo a pin or add config the gate never checked, and glibc's
  // GCONV_PATH (with a working-tree-encoding attribute) loads a workspace .so into git,
  // XDG_CONFIG_HOME adds attribute and ignore files. The commit identity and locale pass.
  const bool gated = !gate_env.empty();
  auto passes = [gated](const std::string& name) {
    if (!gated) return true;
    for (const char* k : {"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME",
                          "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "TZ", "TERM", "LANG", "LANGUAGE"})
      if (name == k) return true;
    return name.starts_with("LC_");
  };
  for (const auto* list : {&m.env, &gate_env}) {
    for (const std::string& kv : *list) {
      auto parsed = policy::env::parseAssignment(kv);
      if (!parsed.ok()) return parsed.error().wrap("environment");
      if (list == &m.env && !passes(parsed->first)) continue;
      extra.push_back(std::move(*parsed));
    }
  }
  spec.env = policy::env::buildEnvironment(extra);
  spec.workspace = ws.path();
  // The private workspace holds what the whole run declared and what the root task's commands
  // made; a spawned task's command sees only what that task declares (it may have narrowed
  // its inputs).
  if (!whole_workspace) spec.stage_only = sandbox::SandboxSpec::StageOnly{m.inputs, m.outputs};
  spec.outputs = m.outputs;
  RETURN_IF_ERROR(applyManifestLimits(m, spec));
  spec.limits.timeout = timeout;
  return spec;
}

Result<CommandOutcome> runSandboxed(sandbox::SandboxSpec spec, uint64_t keep_bytes, int keep_into) {
  UniqueFd null_in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null_in.valid()) return sysError("/dev/null");
  ASSIGN_OR_RETURN(std::unique_ptr<OutputCapture> capture, OutputCapture::start(keep_bytes));
  spec.stdio.in = null_in.get();
  spec.stdio.out = capture->stdoutFd();
  spec.stdio.err = capture->stderrFd();
  CommandOutcome outcome;
  sandbox::RunOptions options;
  if (keep_into >= 0) options.after_command = [&outcome, keep_into](int ws_root) { outcome.kept = mirrorWorkspace(ws_root, keep_into); };
  auto report = sandbox::runLinux(spec, options);
  outcome.output = capture->finish();
  if (!report.ok()) return report.error();
  outcome.exit_code = report->exit_code;
  outcome.status = report->command_status;
  outcome.signal = report->signal;
  outcome.killed_by = sandbox::killedByName(report->killed_by);
  outcome.wall_ms = report->wall_ms;
  outcome.outputs = std::move(report->outputs);
  return outcome;
}

}  // namespace corral::agent
