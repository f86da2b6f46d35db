// SPDX-License-Identifier: Apache-2.0
// corral-core's subcommand dispatch (the launcher, cli/launcher.cc, hands it everything but
// plain `corral exec`).
#include "cli/main.h"

#include <cstdio>
#include <string>
#include <vector>

#include "cli/claims.h"
#include "cli/daemon.h"
#include "cli/doctor.h"
#include "cli/egress_process.h"
#include "cli/exec.h"
#include "cli/exec_options.h"
#include "cli/keygen.h"
#include "cli/market.h"
#include "cli/run.h"
#include "cli/usage.h"
#include "cli/verify.h"
#include "cli/verify_release.h"
#include "cli/version.h"
#include "cli/wasm.h"
#include "daemon/shim.h"
#include "sandbox/linux_backend.h"

namespace corral::cli {

int main(int argc, char** argv) {
  sandbox::rememberProcessArgs(argc, argv);
  // Not a user command (the launcher never hands it over): the proxy process of a launcher's
  // --net proxy run (cli/egress_process.h).
  if (argc >= 2 && std::string(argv[1]) == kEgressServeCommand)
    return egressServeMain(std::vector<std::string>(argv + 2, argv + argc));
  // Not a user command either: a session's shim, started by the daemon (daemon/shim.h).
  if (argc >= 2 && std::string(argv[1]) == daemon::kShimCommand)
    return daemon::shimMain(std::vector<std::string>(argv + 2, argv + argc));
  if (auto answered = answerWithoutRunning(argc, argv)) return *answered;
  const std::string cmd = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  if (cmd == "exec")
    return execMain(rest, {.start_egress = [](ExecInvocation& inv) { return startExecEgress(inv); },
                           .run_vm = [](const ExecInvocation& inv) -> Result<vm::VmRun> {
                             RETURN_IF_ERROR(vm::checkSpec(inv.spec, inv.vm, inv.net_proxy));
                             return vm::runVm(inv.spec, inv.vm);
                           },
                           .hand_off_vm = {}});
  if (cmd == "run") return runMain(rest);
  if (cmd == "doctor") return doctorMain(rest);
  if (cmd == "claims") return claimsMain(argc - 1, argv + 1);
  if (cmd == "verify") return verifyMain(rest);
  if (cmd == "keygen") return keygenMain(rest);
  if (cmd == "version" || cmd == "--version") return versionMain(rest);
  if (cmd == "verify-release") return verifyReleaseMain(rest);
  if (cmd == "wasm") return wasmMain(rest);
  if (cmd == "market") return marketMain(rest);
  if (cmd == "daemon") return daemonMain(rest);
  if (cmd == "session") return sessionMain(rest);
  if (cmd == "credential") return credentialMain(rest);
  if (cmd == "profile") return profileMain(rest);
  std::fprintf(stderr, "corral: internal error: no handler for a known command\n");
  return 125;
}

}  // namespace corral::cli
