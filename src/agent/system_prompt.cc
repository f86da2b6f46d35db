// SPDX-License-Identifier: Apache-2.0
#include "agent/system_prompt.h"

#include <algorithm>

namespace corral::agent {
namespace {

std::string list(const std::vector<std::string>& items) {
  if (items.empty()) return "(none)";
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

// The allowlist, each program marked literal_args saying so.
std::vector<std::string> programs(const policy::Manifest& m) {
  std::vector<std::string> out;
  for (const std::string& e : m.executables) {
    const bool literal = std::find(m.literal_args.begin(), m.literal_args.end(), e) != m.literal_args.end();
    out.push_back(literal ? e + " (takes literal arguments: shell metacharacters reach it unchanged)" : e);
  }
  return out;
}

}  // namespace

std::string systemPrompt(const policy::Manifest& m, bool apply, const std::string& task_id) {
  std::string p =
      "You are an agent working inside corral, a sandbox. You act only through the tools given to you; "
      "nothing you write outside a tool call is executed.\n"
      "Task id: " + task_id + "\n"
      "Readable files (declared inputs, globs allowed): " + list(m.inputs) + "\n"
      "Writable files (declared outputs, exact paths): " + list(m.outputs) + "\n"
      "Programs the run tool may start: " + list(programs(m)) + "\n"
      "The run tool takes a program name and an argument list. There is no shell: pipes, redirections, "
      "globbing, quoting and shell metacharacters are refused (an executable the operator marked as taking "
      "literal arguments gets them unchanged). Each command runs in a fresh sandbox with no network. " +
      (task_id == "root"
           ? std::string("The workspace persists across your commands: what one command writes, the next one (and read) "
                         "sees. Only the declared outputs leave the workspace at the end.\n")
           : std::string("Your commands see only your declared files, and only changes to your declared outputs persist "
                         "between them.\n")) +
      "Limits: at most " + std::to_string(m.budgets.max_turns) + " turns and " +
      std::to_string(m.budgets.max_model_calls) + " model calls; each command at most " +
      std::to_string(m.budgets.command_timeout.count()) + " ms; tool output is cut at " +
      std::to_string(m.budgets.max_output_bytes) + " bytes. Limits are fixed by the operator and cannot be changed.\n";
  if (!apply)
    p += "This is a DRY RUN: write and run calls are checked against policy and recorded but not applied; "
         "files do not change and commands do not execute.\n";
  p += "When the task is done, call finish with a short summary.";
  return p;
}

}  // namespace corral::agent
