// SPDX-License-Identifier: Apache-2.0
// corral-core's subcommand dispatch (the launcher, cli/launcher.cc, hands it everything but
// plain `corral exec`).
#include "cli/main.h"

#include <cstdio>
#include <string>
#include <vector>

#include "cli/claims.h"
#include "cli/doctor.h"
#include "cli/exec.h"
#include "cli/keygen.h"
#include "cli/run.h"
#include "cli/usage.h"
#include "cli/verify.h"
#include "sandbox/linux_backend.h"

namespace corral::cli {

int main(int argc, char** argv) {
  sandbox::rememberProcessArgs(argc, argv);
  if (auto answered = answerWithoutRunning(argc, argv)) return *answered;
  const std::string cmd = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  if (cmd == "exec") return execMain(rest, {.start_egress = startExecEgress, .hand_off = {}});
  if (cmd == "run") return runMain(rest);
  if (cmd == "doctor") return doctorMain(rest);
  if (cmd == "claims") return claimsMain(argc - 1, argv + 1);
  if (cmd == "verify") return verifyMain(rest);
  if (cmd == "keygen") return keygenMain(rest);
  std::fprintf(stderr, "corral: internal error: no handler for a known command\n");
  return 125;
}

}  // namespace corral::cli
