// SPDX-License-Identifier: Apache-2.0
// `corral session exec --tty` and `corral session attach`: a terminal in the session over an
// upgraded connection (api.md, Terminals), this terminal raw meanwhile and restored after.
#pragma once

#include <string>
#include <vector>

#include "daemon/json_fields.h"

namespace corral::cli {

// Starts body (a command's JSON: argv, env, cwd, timeout) with a terminal the size of this one
// and relays it; the command's exit status (exec's contract), 125 for a refusal.
int terminalExec(const std::string& id, daemon::Json body, bool json_report);
// `attach ID [--env K=V]... [--cwd REL] [-- CMD [ARGS...]]`: an interactive shell by default;
// `attach ID --command N`: re-attaches to tty command N (its scrollback, then live).
int attach(const std::vector<std::string>& args);

}  // namespace corral::cli
