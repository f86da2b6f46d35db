// SPDX-License-Identifier: Apache-2.0
// corral's entry point: everything lives in cli::main.
#include "cli/main.h"

int main(int argc, char** argv) { return corral::cli::main(argc, argv); }
