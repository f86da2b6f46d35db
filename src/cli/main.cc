// SPDX-License-Identifier: Apache-2.0
// Subcommand dispatch.
#include "cli/main.h"

#include <cstdio>
#include <cstring>

namespace corral::cli {

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: corral exec|doctor|claims|version ...\n");
    return 125;
  }
  std::fprintf(stderr, "corral: unknown command '%s'\n", argv[1]);
  return 125;
}

}  // namespace corral::cli
