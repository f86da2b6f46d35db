// SPDX-License-Identifier: Apache-2.0
// run: the command gate (and git gate) decide; the command runs in a fresh sandbox, or with
// --session in that daemon session.
#include <fcntl.h>
#include <sys/stat.h>

#include "agent/sandbox_command.h"
#include "agent/vm_command.h"
#include "agent/tool_common.h"
#include "base/sha256.h"
#include "policy/command_gate.h"
#include "policy/git_gate.h"

namespace corral::agent::tools {

using nlohmann::json;

namespace {

// The argv as the policy saw it: short plain arguments as given, others by hash and size,
// and past kTraceListBudget the rest as one entry (boundedTraceList).
json traceArgv(const std::vector<std::string>& argv) {
  return boundedTraceList(argv, kTraceListBudget, [](const std::string& a) -> json {
    if (traceable(a, 256) == a) return a;
    return {{"sha256", audit::sha256Hex(a)}, {"bytes", a.size()}};
  });
}

json streamJson(const CapturedStream& s, const char* name) {
  return {{std::string(name) + "_bytes", s.total},
          {std::string(name) + "_sha256", s.sha256},
          {std::string(name) + "_truncated", s.truncated()}};
}

// The repository git would use in the workspace: .git must be a real directory (a "gitdir:"
// file or a linked worktree's commondir points git at another repository), and every config
// file git reads there must pass policy::checkGitConfig.
Result<void> checkWorkspaceRepository(const PrivateWorkspace& ws) {
  struct stat st;
  if (::fstatat(ws.dirFd(), ".git", &st, AT_SYMLINK_NOFOLLOW) != 0) return {};  // no repository yet
  if (!S_ISDIR(st.st_mode)) return Error(Errc::kRefused, ".git is not a directory (a gitdir link): git refused here");
  if (::fstatat(ws.dirFd(), ".git/commondir", &st, AT_SYMLINK_NOFOLLOW) == 0)
    return Error(Errc::kRefused, ".git/commondir points at another repository: git refused here");
  for (const char* name : {".git/config", ".git/config.worktree"}) {
    auto config = ws.readFile(name, size_t{1} << 20);
    if (config.ok()) {
      RETURN_IF_ERROR(policy::checkGitConfig(*config));
    } else if (config.error().code() != ENOENT) {
      return Error(Errc::kRefused, std::string("cannot check ") + name + ": " + config.error().message());
    }
  }
  return {};
}

// --session: the gated command runs in the daemon session (its workspace, shared between the
// run's commands and kept by the session); traced as a fresh-sandbox command is, plus the
// session and the daemon's command number.
Result<ToolResult> runInSession(RunContext& run, TaskState& task, const ToolCall& call, const policy::CommandDecision& d,
                                json targs, policy::Millis timeout) {
  // A spawned task sees only what it declares; a session's workspace is whole and shared, so
  // that narrowed view could not hold there.
  if (task.id != "root")
    return refuse(run, task, call, "session.subtask",
                  "a spawned task's commands do not run in a session: its narrowed view of the workspace cannot hold there", targs);
  auto spec = commandSpec(*task.manifest, *run.workspace, d.argv, d.env, timeout, true);
  if (!spec.ok()) return refuse(run, task, call, "sandbox", spec.error().message(), targs);
  SessionCommand cmd{spec->argv, spec->env, timeout, task.manifest->budgets.max_output_bytes};
  auto ran = run.session->run(cmd);
  ++run.counters.commands;
  json entry = traceBase(task, call, "allow");
  entry["rule"] = d.rule;
  entry["args"] = std::move(targs);
  entry["timeout_ms"] = timeout.count();
  entry["session"] = run.session->id();
  if (!ran.ok()) {
    entry["error"] = traceable(ran.error().message(), 512);
    RETURN_IF_ERROR(run.record("tool_call", entry));
    return ToolResult{modelText({{"ok", false}, {"error", "session: " + ran.error().message()}}), false};
  }
  const CommandOutcome& o = ran->outcome;
  entry["session_command"] = ran->command_id;
  entry["exit_code"] = o.exit_code;
  if (o.status) entry["status"] = *o.status;
  if (o.signal) entry["signal"] = *o.signal;
  entry["killed_by"] = o.killed_by;
  entry["wall_ms"] = static_cast<int64_t>(o.wall_ms);
  entry.update(streamJson(o.output.out, "stdout"));
  entry.update(streamJson(o.output.err, "stderr"));
  if (run.content != nullptr) {
    RETURN_IF_ERROR(run.keep(o.output.out.kept));
    RETURN_IF_ERROR(run.keep(o.output.err.kept));
    entry["stdout_kept_sha256"] = audit::sha256Hex(o.output.out.kept);
    entry["stderr_kept_sha256"] = audit::sha256Hex(o.output.err.kept);
  }
  RETURN_IF_ERROR(run.record("tool_call", entry));
  json result = {{"ok", true},
                 {"exit_code", o.exit_code},
                 {"killed_by", o.killed_by},
                 {"stdout", o.output.out.kept},
                 {"stderr", o.output.err.kept}};
  if (o.output.out.truncated()) result["stdout_truncated_from_bytes"] = o.output.out.total;
  if (o.output.err.truncated()) result["stderr_truncated_from_bytes"] = o.output.err.total;
  return ToolResult{modelText(result), false};
}

}  // namespace

Result<ToolResult> run(RunContext& run, TaskState& task, const ToolCall& call, const json& args) {
  if (auto f = onlyFields(args, {"command", "args"}); !f.ok()) return refuse(run, task, call, "arguments", f.error().message());
  auto command = stringArg(args, "command", policy::kMaxArgBytes);
  if (!command.ok()) return refuse(run, task, call, "arguments", command.error().message());
  std::vector<std::string> argv_in;
  if (auto it = args.find("args"); it != args.end()) {
    if (!it->is_array()) return refuse(run, task, call, "arguments", "argument 'args' must be an array of strings");
    if (it->size() > policy::kMaxArgs)
      return refuse(run, task, call, "arguments", "more than " + std::to_string(policy::kMaxArgs) + " arguments");
    for (const json& a : *it) {
      if (!a.is_string()) return refuse(run, task, call, "arguments", "argument 'args' must be an array of strings");
      argv_in.push_back(a.get<std::string>());
    }
  }
  json requested = {{"command", traceable(*command, 256)}, {"args", traceArgv(argv_in)}};
  const policy::CommandDecision d = policy::gateCommand(task.manifest->executables, *command, argv_in, task.manifest->literal_args);
  if (!d.allowed) return refuse(run, task, call, d.rule, d.reason, requested);
  json targs = {{"argv", traceArgv(d.argv)}};

  // A repository's own config can name programs git would run: refuse git there.
  // In a session, anything still running there (or another client of it) can rewrite .git/config
  // between a check and git: the check could not hold, so git is refused there.
  if (d.argv.at(0) == "git" && run.session != nullptr)
    return refuse(run, task, call, "git.session",
                  "git is not run in a session: its shared workspace's .git/config cannot be checked before git reads it", targs);
  if (d.argv.at(0) == "git") {
    if (auto c = checkWorkspaceRepository(*run.workspace); !c.ok())
      return refuse(run, task, call, "git.config", c.error().message(), targs);
  }
  if (!run.apply) {
    json entry = traceBase(task, call, "dry_run");
    entry["rule"] = d.rule;
    entry["args"] = targs;
    RETURN_IF_ERROR(run.record("tool_call", entry));
    return ToolResult{modelText({{"ok", true},
                                 {"dry_run", true},
                                 {"note", "dry run: the command was allowed by policy but not executed (corral run without --apply)"}}),
                      false};
  }
  if (run.sandbox_unavailable)
    return refuse(run, task, call, "sandbox-unavailable",
                  "commands cannot be sandboxed on this host: " + *run.sandbox_unavailable, targs);
  const policy::Millis timeout = task.budget->commandTimeout(run.now());
  if (timeout.count() <= 0) return refuse(run, task, call, "budget.wall_time", "no wall time left for a command", targs);

  if (run.session != nullptr) return runInSession(run, task, call, d, std::move(targs), timeout);
  // The root task's commands share one workspace, kept from each command to the next; a
  // spawned task's commands see its narrowed view and give back only its declared outputs.
  const bool keep = task.id == "root";
  // The VM backend stages the whole private workspace onto the guest's disk: a spawned task's
  // narrowed view could not hold there.
  if (run.vm != nullptr && !keep)
    return refuse(run, task, call, "vm.subtask",
                  "a spawned task's commands do not run on the VM backend: its narrowed view of the workspace cannot be staged there", targs);
  auto spec = commandSpec(*task.manifest, *run.workspace, d.argv, d.env, timeout, keep);
  if (!spec.ok()) return refuse(run, task, call, "sandbox", spec.error().message(), targs);
  UniqueFd egress_channel;  // the sandbox's end; must outlive the command
  if (run.egress && run.vm == nullptr) {  // the VM backend has none: chooseBackend refused network at load
    auto channel = run.egress->attach();
    if (!channel.ok()) return refuse(run, task, call, "sandbox", channel.error().message(), targs);
    egress_channel = std::move(*channel);
    spec->proxy.channel = egress_channel.get();
    for (std::string& kv : run.egress->sandboxEnvironment()) spec->env.push_back(std::move(kv));
  }
  json vm_info;
  Result<CommandOutcome> outcome = [&]() -> Result<CommandOutcome> {
    if (run.vm == nullptr)
      return runSandboxed(std::move(*spec), task.manifest->budgets.max_output_bytes, keep ? run.workspace->dirFd() : -1);
    ASSIGN_OR_RETURN(VmCommandOutcome ran, runInVm(*spec, run.vm->options, task.manifest->budgets.max_output_bytes));
    vm_info = std::move(ran.vm);
    return std::move(ran.outcome);
  }();
  egress_channel.reset();
  ++run.counters.commands;
  json entry = traceBase(task, call, "allow");
  entry["rule"] = d.rule;
  entry["args"] = targs;
  entry["timeout_ms"] = timeout.count();
  if (run.vm != nullptr) {
    entry["backend"] = "vm";
    entry["vm"] = vm_info.is_null() ? json{{"accelerator", run.vm->accelerator}} : vm_info;
  }
  if (!outcome.ok()) {
    entry["error"] = traceable(outcome.error().message(), 512);
    RETURN_IF_ERROR(run.record("tool_call", entry));
    return ToolResult{modelText({{"ok", false}, {"error", "sandbox: " + outcome.error().message()}}), false};
  }
  entry["exit_code"] = outcome->exit_code;
  if (outcome->status) entry["status"] = *outcome->status;
  if (outcome->signal) entry["signal"] = *outcome->signal;
  entry["killed_by"] = outcome->killed_by;
  entry["wall_ms"] = static_cast<int64_t>(outcome->wall_ms);
  entry.update(streamJson(outcome->output.out, "stdout"));
  entry.update(streamJson(outcome->output.err, "stderr"));
  if (outcome->kept) {
    const MirrorStats& k = *outcome->kept;
    entry["workspace_kept"] = {{"files", k.files}, {"links", k.links}, {"removed", k.removed}, {"skipped", k.skipped}};
    if (k.skipped > 0) entry["workspace_kept"]["first_skip"] = traceable(k.first_skip, 512);
  }
  // The manifest's outputs this command left (a list the operator sizes: bounded all the same).
  std::vector<std::string> present;
  std::vector<const sandbox::OutputResult*> by_index;
  for (const sandbox::OutputResult& o : outcome->outputs) {
    if (o.status == sandbox::OutputResult::Status::kMissing) continue;
    present.push_back(o.path);
    by_index.push_back(&o);
  }
  entry["outputs"] = boundedTraceList(present, kTraceListBudget, [&](const std::string& path) -> json {
    const sandbox::OutputResult& o = *by_index[static_cast<size_t>(&path - present.data())];
    json x = {{"path", traceable(o.path, 1024)},
              {"status", o.status == sandbox::OutputResult::Status::kCopied ? "copied" : "refused"},
              {"bytes", o.bytes}};
    if (!o.reason.empty()) x["reason"] = traceable(o.reason, 512);
    return x;
  });
  if (run.content != nullptr) {  // what the model was shown, when contents are kept
    RETURN_IF_ERROR(run.keep(outcome->output.out.kept));
    RETURN_IF_ERROR(run.keep(outcome->output.err.kept));
    entry["stdout_kept_sha256"] = audit::sha256Hex(outcome->output.out.kept);
    entry["stderr_kept_sha256"] = audit::sha256Hex(outcome->output.err.kept);
  }
  RETURN_IF_ERROR(run.record("tool_call", entry));
  // The command's connections, as far as they have ended (late ones follow the next call).
  if (run.egress) RETURN_IF_ERROR(run.egress->flush(*run.trace));

  json result = {{"ok", true},
                 {"exit_code", outcome->exit_code},
                 {"killed_by", outcome->killed_by},
                 {"stdout", outcome->output.out.kept},
                 {"stderr", outcome->output.err.kept}};
  if (outcome->output.out.truncated()) result["stdout_truncated_from_bytes"] = outcome->output.out.total;
  if (outcome->output.err.truncated()) result["stderr_truncated_from_bytes"] = outcome->output.err.total;
  if (outcome->kept && outcome->kept->skipped > 0)
    result["workspace_not_kept"] = std::to_string(outcome->kept->skipped) + " entries, first " + outcome->kept->first_skip;
  for (const sandbox::OutputResult& o : outcome->outputs)
    if (o.status == sandbox::OutputResult::Status::kRefused)
      result["refused_outputs"].push_back(o.path + ": " + o.reason);
  return ToolResult{modelText(result), false};
}

}  // namespace corral::agent::tools
