// SPDX-License-Identifier: Apache-2.0
// read and write: declared files only, inside the run's private workspace.
#include <algorithm>

#include "agent/tool_common.h"
#include "base/sha256.h"
#include "policy/path_policy.h"

namespace corral::agent::tools {

using nlohmann::json;

namespace {

bool isOutput(const policy::Manifest& m, const std::string& path) {
  return std::find(m.outputs.begin(), m.outputs.end(), path) != m.outputs.end();
}

bool isInput(const policy::Manifest& m, const std::string& path) {
  return std::any_of(m.inputs.begin(), m.inputs.end(),
                     [&](const std::string& p) { return policy::inputGlobMatch(p, path); });
}

// The path as policy sees it, or the refusal rule and reason.
Result<std::string> checkedPath(const json& args) {
  ASSIGN_OR_RETURN(std::string path, stringArg(args, "path", policy::path::kMaxPath));
  auto ok = policy::path::outputPath(path);
  if (!ok.ok()) return Error(Errc::kRefused, "path '" + traceable(path, 128) + "': " + ok.error().message());
  return path;
}

// A missing or mistyped argument is an "arguments" refusal; a path policy refused is "path".
std::string_view pathRule(const Error& e) {
  return e.code() == static_cast<int>(Errc::kRefused) ? "path" : "arguments";
}

}  // namespace

// cppcheck-suppress constParameter ; the signature is tools::Handler's (tool_common.h)
Result<ToolResult> read(RunContext& run, TaskState& task, const ToolCall& call, const json& args) {
  if (auto f = onlyFields(args, {"path"}); !f.ok()) return refuse(run, task, call, "arguments", f.error().message());
  auto path = checkedPath(args);
  if (!path.ok()) return refuse(run, task, call, pathRule(path.error()), path.error().message());
  const json targs = {{"path", traceable(*path, 1024)}};
  if (!isInput(*task.manifest, *path) && !isOutput(*task.manifest, *path))
    return refuse(run, task, call, "not-declared", *path + " is not a declared input or output", targs);
  const uint64_t cap = task.manifest->budgets.max_output_bytes;
  auto content = run.workspace->readFile(*path, cap);
  // Over the size cap, or not a regular file beneath the workspace: a refusal with its rule,
  // counted as one. A file that is simply missing is an allowed call that found nothing.
  if (!content.ok() && content.error().code() == static_cast<int>(Errc::kLimit))
    return refuse(run, task, call, "budget.max_output_bytes", content.error().message(), targs);
  if (!content.ok() && content.error().code() == static_cast<int>(Errc::kRefused))
    return refuse(run, task, call, "path", content.error().message(), targs);
  json entry = traceBase(task, call, "allow");
  entry["args"] = targs;
  if (!content.ok()) {
    entry["error"] = traceable(content.error().message(), 512);
    RETURN_IF_ERROR(run.record("tool_call", entry));
    return ToolResult{modelText({{"ok", false}, {"error", content.error().message()}}), false};
  }
  entry["bytes"] = content->size();
  entry["sha256"] = audit::sha256Hex(*content);
  RETURN_IF_ERROR(run.keep(*content));
  RETURN_IF_ERROR(run.record("tool_call", entry));
  return ToolResult{modelText({{"ok", true}, {"path", *path}, {"content", *content}}), false};
}

// cppcheck-suppress constParameter ; the signature is tools::Handler's (tool_common.h)
Result<ToolResult> write(RunContext& run, TaskState& task, const ToolCall& call, const json& args) {
  if (auto f = onlyFields(args, {"path", "content"}); !f.ok())
    return refuse(run, task, call, "arguments", f.error().message());
  auto path = checkedPath(args);
  if (!path.ok()) return refuse(run, task, call, pathRule(path.error()), path.error().message());
  auto content = stringArg(args, "content", kMaxToolArgumentsBytes);
  if (!content.ok()) return refuse(run, task, call, "arguments", content.error().message());
  json targs = {{"path", traceable(*path, 1024)}, {"bytes", content->size()}, {"sha256", audit::sha256Hex(*content)}};
  RETURN_IF_ERROR(run.keep(*content));
  if (!isOutput(*task.manifest, *path))
    return refuse(run, task, call, "not-declared", *path + " is not a declared output", targs);
  if (content->size() > task.manifest->sandbox.workspace_bytes.value_or(uint64_t{1} << 30))
    return refuse(run, task, call, "size", "content is larger than the workspace size limit", targs);
  if (!run.apply) {
    json entry = traceBase(task, call, "dry_run");
    entry["args"] = targs;
    RETURN_IF_ERROR(run.record("tool_call", entry));
    return ToolResult{modelText({{"ok", true},
                                 {"dry_run", true},
                                 {"note", "dry run: the write was validated but not applied (corral run without --apply)"}}),
                      false};
  }
  auto written = run.workspace->writeFile(*path, *content);
  json entry = traceBase(task, call, "allow");
  entry["args"] = targs;
  if (!written.ok()) {
    entry["error"] = traceable(written.error().message(), 512);
    RETURN_IF_ERROR(run.record("tool_call", entry));
    return ToolResult{modelText({{"ok", false}, {"error", written.error().message()}}), false};
  }
  ++run.counters.writes;
  RETURN_IF_ERROR(run.record("tool_call", entry));
  return ToolResult{modelText({{"ok", true}, {"path", *path}, {"bytes", content->size()}}), false};
}

}  // namespace corral::agent::tools
