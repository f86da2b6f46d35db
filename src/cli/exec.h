// SPDX-License-Identifier: Apache-2.0
// `corral exec`: flags -> SandboxSpec -> backend -> report and exit status.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "base/unique_fd.h"
#include "vm/vm_backend.h"

namespace corral::cli {

struct ExecInvocation;

// The egress proxy of one `--net proxy` run, seen from exec's glue. An interface so that
// the launcher binary can run every other exec without linking the proxy (Asio, OpenSSL):
// that is most of corral's start-up cost (docs/benchmarks.md).
class ExecEgress {
 public:
  virtual ~ExecEgress() = default;
  // Returns once the proxy serves, or why it never will; the sandbox is built meanwhile and
  // its command starts only after an ok (a proxy started beside it, cli/egress_process.h).
  // `signals`: corral's signalfd (RunOptions::before_command); a terminating signal there
  // while waiting is an error.
  virtual Result<void> ready(int /*signals*/) { return {}; }
  // Stops the proxy, closing what is still open: every event is in afterwards. An error: the
  // proxy did not end as it should (it died during the run), and the run is corral's failure.
  virtual Result<void> stop() = 0;
  // Adds "egress" (and "leases" when the run had credentials) to the report's extra object.
  virtual void addToReport(nlohmann::ordered_json& extra) = 0;
};

struct ExecEnvironment {
  // Starts the run's proxy and points inv.spec at it: in this process (corral-core,
  // startExecEgress) or as a corral-core process beside the sandbox (the launcher,
  // startEgressProcess).
  std::function<Result<std::unique_ptr<ExecEgress>>(ExecInvocation&)> start_egress;
  // --backend vm: corral-core runs the VM (run_vm); the launcher, which links no VM code,
  // hands the whole command line to corral-core instead (hand_off_vm, returns on failure only).
  std::function<Result<vm::VmRun>(const ExecInvocation&)> run_vm;
  std::function<int()> hand_off_vm;
};

int execMain(const std::vector<std::string>& args, const ExecEnvironment& env);

// How a proxy started by startExecEgress is wired. Empty (the default): it makes the sandbox's
// channel itself (inv.spec.proxy.channel), draws its own placeholders and adds the sandbox's
// environment to inv.spec.env. In a proxy process (cli/egress_process.h) the launcher has done
// all that: the proxy serves `proxy_end` and takes each placeholder's bytes from
// `placeholder_random`, so they match the environment the launcher gave the sandbox, and
// writes each event to `events_file` as it records it instead of keeping it for the report.
struct EgressWiring {
  UniqueFd proxy_end;
  std::function<Result<void>(std::span<uint8_t>)> placeholder_random;
  UniqueFd events_file;
  UniqueFd ssh_agent_listener;  // --ssh-key: the agent socket the launcher made (egress_process.h)
};

// corral-core's egress: the real proxy, in this process (cli/exec_egress.cc).
Result<std::unique_ptr<ExecEgress>> startExecEgress(ExecInvocation& inv, EgressWiring wiring = {});

}  // namespace corral::cli
