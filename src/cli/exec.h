// SPDX-License-Identifier: Apache-2.0
// `corral exec`: flags -> SandboxSpec -> backend -> report and exit status.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace corral::cli {

struct ExecInvocation;

// The egress proxy of one `--net proxy` run, seen from exec's glue. An interface so that
// the launcher binary can run every other exec without linking the proxy (Asio, OpenSSL):
// that is most of corral's start-up cost (docs/benchmarks.md).
class ExecEgress {
 public:
  virtual ~ExecEgress() = default;
  // Stops the proxy, closing what is still open: every event is in afterwards.
  virtual void stop() = 0;
  // Adds "egress" (and "leases" when the run had credentials) to the report's extra object.
  virtual void addToReport(nlohmann::ordered_json& extra) = 0;
};

struct ExecEnvironment {
  // Starts the run's proxy and points inv.spec at it (corral-core only).
  std::function<Result<std::unique_ptr<ExecEgress>>(ExecInvocation&)> start_egress;
  // Without start_egress: hands a `--net proxy` run, unchanged, to a binary that has it.
  // Called before anything else happens; returns only on failure, with what failed (the
  // run is then refused like any other: one line, 125, and the report if one was asked for).
  std::function<Error()> hand_off;
};

int execMain(const std::vector<std::string>& args, const ExecEnvironment& env);

// corral-core's egress: the real proxy (cli/exec_egress.cc).
Result<std::unique_ptr<ExecEgress>> startExecEgress(ExecInvocation& inv);

}  // namespace corral::cli
