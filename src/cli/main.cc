// SPDX-License-Identifier: Apache-2.0
// Subcommand dispatch.
#include "cli/main.h"
#include "cli/option_echo.h"

#include <cstdio>
#include <string>
#include <vector>

#include "cli/claims.h"
#include "cli/doctor.h"
#include "cli/exec.h"
#include "cli/keygen.h"
#include "cli/run.h"
#include "cli/verify.h"
#include "sandbox/linux_backend.h"
#include "policy/units.h"

namespace corral::cli {
namespace {

constexpr const char* kUsage =
    "usage: corral <command> [options]\n"
    "\n"
    "commands:\n"
    "  exec [options] -- CMD [ARGS...]   run one command in a fresh sandbox (corral exec --help)\n"
    "  run MANIFEST [--workspace DIR] [--apply] [--json]\n"
    "                                    drive a model through policy-gated tools (corral run --help)\n"
    "  doctor [--json]                   report host facilities and which mechanism each limit uses\n"
    "  claims [--build DIR] [--render F] run the claim ledger's tests (and render SECURITY.md)\n"
    "  verify WORKSPACE [--public-key PEM] [--trusted-head HEX] [--json]\n"
    "                                    check a workspace's .corral audit record\n"
    "  keygen --out DIR                  write an Ed25519 audit key pair (private key mode 0600)\n"
    "  version                           print the version\n";

}  // namespace

int main(int argc, char** argv) {
  sandbox::rememberProcessArgs(argc, argv);
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 125;
  }
  const std::string cmd = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  if (cmd == "exec") return execMain(rest);
  if (cmd == "run") return runMain(rest);
  if (cmd == "doctor") return doctorMain(rest);
  if (cmd == "claims") return claimsMain(argc - 1, argv + 1);
  if (cmd == "verify") return verifyMain(rest);
  if (cmd == "keygen") return keygenMain(rest);
  if (cmd == "version" || cmd == "--version") {
    std::puts("corral 0.1.0");
    return 0;
  }
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fprintf(stderr, "corral: unknown command %s (try corral --help)\n", optionName(cmd).c_str());
  return 125;
}

}  // namespace corral::cli
