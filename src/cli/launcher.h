// SPDX-License-Identifier: Apache-2.0
// The `corral` binary users run: plain `corral exec` in a small binary, the rest handed to
// corral-core.
#pragma once

namespace corral::cli {
int launcherMain(int argc, char** argv);
}
