// SPDX-License-Identifier: Apache-2.0
// The `corral` binary: plain `corral exec` here, everything else in corral-core
// (cli/launcher.cc says why).
#include "cli/launcher.h"

int main(int argc, char** argv) { return corral::cli::launcherMain(argc, argv); }
