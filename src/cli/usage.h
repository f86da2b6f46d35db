// SPDX-License-Identifier: Apache-2.0
// What both corral binaries (the launcher and corral-core) answer without running anything.
#pragma once

#include <optional>

namespace corral::cli {

// No command, `version`, `help` or an unknown command: prints what fits and returns the exit
// status. A known subcommand: nullopt, for the caller to run.
std::optional<int> answerWithoutRunning(int argc, char** argv);

}  // namespace corral::cli
