// SPDX-License-Identifier: Apache-2.0
// The git gate: local, non-network subcommands only, with hooks, pagers, external diff,
// textconv and every other configured program disabled. Pure.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "policy/command_gate.h"

namespace corral::policy {

// The subcommands a model may run.
inline constexpr std::string_view kGitSubcommands[] = {
    "init", "add", "commit", "status", "diff", "cat-file", "rev-parse",
    "rev-list", "log", "grep", "show", "notes", "gc"};

// args are git's arguments after "git" (already free of shell metacharacters). Refuses any
// option before the subcommand (-c, -C, --exec-path, --git-dir, --work-tree, --config-env,
// --namespace, -p/--paginate, ...), a subcommand not listed above (aliases included: an
// alias is not a listed name), and per-subcommand execution or file-writing vectors
// (--upload-pack, --receive-pack, --exec, -O/--open-files-in-pager, --output, --ext-diff,
// --textconv, --template, --separate-git-dir, ...). On allow, argv is
// {"git", <pinned -c options>, subcommand, args...} and env pins a minimal configuration:
// GIT_CONFIG_NOSYSTEM=1, GIT_CONFIG_GLOBAL=/dev/null, no pager/editor/askpass/ssh, hooks
// and fsmonitor off, no terminal prompts.
CommandDecision gateGit(const std::vector<std::string>& args);

// A repository's own config (.git/config) can name programs git would run on its own
// (filter.*.clean/smudge/process, diff.*.textconv/command, core.fsmonitor, core.hooksPath,
// core.sshCommand, core.pager, core.editor, alias.*, include.path / includeIf.*, ...).
// Returns kRefused naming the first such key, so the runner refuses git in that
// workspace instead of trusting -c overrides to cover every key.
Result<void> checkGitConfig(std::string_view config_text);

}  // namespace corral::policy
