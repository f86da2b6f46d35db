// SPDX-License-Identifier: Apache-2.0
// `corral run --session ID`: the `run` tool's commands go to an existing daemon session instead
// of a fresh sandbox each. The runner knows only this interface; the CLI implements it over
// the daemon's API (cli/run_session.cc), so agent/ never links the daemon.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/sandbox_command.h"
#include "base/result.h"
#include "policy/manifest.h"

namespace corral::agent {

struct SessionCommand {
  std::vector<std::string> argv;  // already gated
  std::vector<std::string> env;   // "K=V": what the command would get in a fresh sandbox
  std::chrono::milliseconds timeout{0};
  uint64_t keep_bytes = 0;        // per stream, for the model (the whole stream is hashed)
};

struct SessionOutcome {
  CommandOutcome outcome;  // outputs and kept stay empty: the session keeps its own workspace
  int64_t command_id = 0;  // the daemon's number for it within the session
};

class CommandSession {
 public:
  virtual ~CommandSession() = default;
  virtual const std::string& id() const = 0;
  // Starts the command in the session, streams its output until it ends, returns its report.
  // An Error: it could not be started or followed (the daemon or the session went away).
  virtual Result<SessionOutcome> run(const SessionCommand& cmd) = 0;
};

// Called once the manifest is parsed, before anything is written or any model is called: an
// Error (the session is broader than the manifest, not the caller's, not running, no daemon)
// refuses the run with exit 125.
using SessionOpener = std::function<Result<std::unique_ptr<CommandSession>>(const policy::Manifest&)>;

}  // namespace corral::agent
