// SPDX-License-Identifier: Apache-2.0
// The `corral` binary users run: plain `corral exec` in a small binary, the rest handed to
// corral-core.
#pragma once

#include <string>

#include "base/result.h"

namespace corral::cli {

int launcherMain(int argc, char** argv);

// corral-core, installed beside this binary. Found through /proc/self/exe, never through
// PATH or the environment: the binary that takes over is the one shipped with this one.
Result<std::string> coreBinaryPath();

}  // namespace corral::cli
