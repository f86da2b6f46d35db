// SPDX-License-Identifier: Apache-2.0
#include "cli/usage.h"
#include "cli/option_echo.h"

#include <cstdio>
#include <string_view>

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
    "  daemon [--state-dir DIR] [--socket PATH]  serve persistent sessions over a UNIX socket\n"
    "  session create|exec|attach|ls|show|rm|cp|pause|resume  sessions of a running daemon (corral session --help)\n"
    "  credential add|rotate|ls|show|rm                   write-only credential records (corral credential --help)\n"
    "  profile add|ls|show|rm                             startup profiles for sessions (corral profile --help)\n"
    "  wasm compile|run MODULE.wasm ...  a WebAssembly guest, deny-by-default (corral wasm --help)\n"
    "  market serve|admin|post|buyer|tasks|result|ledger\n"
    "                                    the task marketplace (corral market --help)\n"
    "  verify-release DIR --public-key PEM\n"
    "                                    check a release's signed SHA256SUMS and the files it lists\n"
    "  version [--json]                  print the version (--json: commit, build, libraries, SBOM hash)\n";

constexpr std::string_view kSubcommands[] = {"exec", "run", "doctor", "claims", "verify", "keygen", "version", "verify-release", "wasm", "market", "daemon", "session", "credential", "profile"};

}  // namespace

std::optional<int> answerWithoutRunning(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 125;
  }
  const std::string_view cmd = argv[1];
  for (std::string_view known : kSubcommands) {
    if (cmd == known) return std::nullopt;
  }
  if (cmd == "--version") return std::nullopt;  // corral-core's `version` answers (cli/version.cc)
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fprintf(stderr, "corral: unknown command %s (try corral --help)\n", optionName(std::string(cmd)).c_str());
  return 125;
}

}  // namespace corral::cli
