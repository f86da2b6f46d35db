// SPDX-License-Identifier: Apache-2.0
// Why two binaries: starting a process that maps corral-core (OpenSSL, curl, Asio, the agent)
// costs about 2 ms of relocations and page faults before main(), a fifth of a whole sandboxed
// launch (docs/benchmarks.md). `corral exec` without --net proxy needs none of it, so the
// `corral` binary holds only the sandbox and hands every other command, unchanged, to
// corral-core with one execve. A `corral wasm run` of a cached module without egress is also
// served here (cli/wasm_run.h): its cache key's SHA-256 is libsodium's, linked statically.
#include "cli/launcher.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/daemon.h"
#include "cli/egress_process.h"
#include "cli/exec.h"
#include "cli/option_echo.h"
#include "cli/usage.h"
#include "cli/wasm_run.h"
#include "daemon/paths.h"
#include "sandbox/linux_backend.h"

namespace corral::cli {
namespace {

constexpr int kExitCorral = 125;

// argv and the environment pass to corral-core unchanged. Returns only on failure.
Error handOff(char** argv) {
  auto core = coreBinaryPath();
  if (!core) return core.error();
  ::execv(core->c_str(), argv);
  return sysError("cannot start " + *core);
}

int handOffOrFail(char** argv) {
  std::fprintf(stderr, "corral: %s\n", oneLine(handOff(argv).message()).c_str());
  return kExitCorral;
}

}  // namespace

Result<std::string> coreBinaryPath() {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return sysError("cannot find corral-core: readlink /proc/self/exe");
  std::string core(self, static_cast<size_t>(n));
  // Started from a memfd or another anonymous file there is no directory to look beside.
  if (core.front() != '/' || core.rfind("/memfd:", 0) == 0)
    return Error(Errc::kUnsupported, "cannot find corral-core: this corral was not started from a file (" + core + ")");
  core.resize(core.rfind('/') + 1);
  core += "corral-core";
  return core;
}

int launcherMain(int argc, char** argv) {
  sandbox::rememberProcessArgs(argc, argv);
  if (auto answered = answerWithoutRunning(argc, argv)) return *answered;
  const std::string cmd = argv[1];
  // `session exec` is the call an agent makes again and again: served here too, it skips
  // corral-core's start (its client is a Unix-socket HTTP client, no OpenSSL; docs/daemon.md).
  if (cmd == "session" && argc > 2 && std::string(argv[2]) == "exec" && daemon::socketKnownWithoutPasswd())
    return sessionMain(std::vector<std::string>(argv + 2, argv + argc));
  std::vector<std::string> rest(argv + 2, argv + argc);
  if (cmd == "wasm") return wasmLauncherMain(rest, [argv] { return handOffOrFail(argv); });
  if (cmd != "exec") return handOffOrFail(argv);
  // A --net proxy run stays here too: its proxy is a corral-core process started beside the
  // sandbox (cli/egress_process.h).
  return execMain(rest, {.start_egress = [&rest](ExecInvocation& inv) { return startEgressProcess(inv, rest); },
                         .run_vm = {},
                         .hand_off_vm = [argv] { return handOffOrFail(argv); }});
}

}  // namespace corral::cli
