// SPDX-License-Identifier: Apache-2.0
// `corral run --session ID`: the run's commands in an existing daemon session, through the API.
#pragma once
#include <string>

#include "agent/session_commands.h"

namespace corral::cli {

// Connects to the daemon, checks that session ID is the caller's, running, and no broader
// than the manifest (field by field: docs/run.md, --session), and answers a CommandSession
// that starts each command there, streams its output and waits for its exit report.
agent::SessionOpener sessionOpener(std::string id);

}  // namespace corral::cli
