// SPDX-License-Identifier: Apache-2.0
// corral-core: every command (the `corral` launcher hands it all but plain `corral exec`).
#include "cli/main.h"

int main(int argc, char** argv) { return corral::cli::main(argc, argv); }
