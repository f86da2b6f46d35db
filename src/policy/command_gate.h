// SPDX-License-Identifier: Apache-2.0
// The `run` tool's command gate: which argv a model may have executed. Pure.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace corral::policy {

inline constexpr size_t kMaxArgs = 256;
inline constexpr size_t kMaxArgBytes = size_t{16} * 1024;    // one argument
inline constexpr size_t kMaxArgvBytes = size_t{128} * 1024;  // all of them

// What the gate decided. On allow, argv/env are exactly what the runner executes.
struct CommandDecision {
  bool allowed = false;
  std::string rule;                 // stable id: "allowlist", "metachar", "git.subcommand", ...
  std::string reason;               // one line for the model and the trace; never echoes a whole argument
  std::vector<std::string> argv;    // argv[0] is the allowlisted basename (PATH-resolved inside)
  std::vector<std::string> env;     // extra "K=V" the command must run with (git's pinned config)

  // A refusal under `rule`, saying why.
  static CommandDecision refused(std::string rule, std::string reason) {
    CommandDecision d;
    d.rule = std::move(rule);
    d.reason = std::move(reason);
    return d;
  }
};

// The executable is reduced to its basename (the model's directory is discarded); it must
// be exactly one of `allowed` (basenames). Every argument is refused when it holds a shell
// metacharacter (kShellMetachars), a control byte (including NUL, CR, LF) or invalid UTF-8,
// or when a size limit above is exceeded. When the basename is "git", gateGit() also decides.
// '~' counts only where a shell would expand it (first byte, or right after '=' or ':'), so
// git revisions such as HEAD~1 pass. docs/command-gate.md lists every rule.
// literal: the basenames the manifest marked "literal_args": no shell is ever involved, so their
// arguments reach them unchanged; for them the metacharacter rule is lifted and tab and newline
// pass (code for `python3 -c`), while NUL and other control bytes, invalid UTF-8 and the size
// limits still refuse. A metacharacter refusal of an unmarked program says how to opt in.
CommandDecision gateCommand(const std::vector<std::string>& allowed, std::string_view command,
                            const std::vector<std::string>& args, const std::vector<std::string>& literal = {});

// The argument rules above on their own, shared by gateCommand and gateGit. Refuses with the
// first offending argument ("argument N" is args[N-1], i.e. argv[N]); otherwise returns an
// allowed decision with empty argv.
CommandDecision checkArguments(const std::vector<std::string>& args, bool literal = false);

inline constexpr std::string_view kShellMetachars = ";&|$`<>(){}[]*?!~\\'\"#";

}  // namespace corral::policy
