// SPDX-License-Identifier: Apache-2.0
// `corral run`: load and freeze the manifest, stage the private workspace, drive the agent
// loops (the root task, then each spawned subtask), apply declared outputs, commit the
// memory store, and seal the audit record (trace + result.json, optionally signed).
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/run_state.h"
#include "agent/session_commands.h"
#include "agent/vm_command.h"
#include "base/result.h"

namespace corral::agent {

struct RunRequest {
  std::string manifest_path;
  std::optional<std::string> workspace;  // default: the manifest's folder
  bool apply = false;
  std::string signing_key_file;          // empty: $CORRAL_AUDIT_PRIVATE_KEY, else unsigned
  TraceContent trace_content = TraceContent::kHashes;
  // --session ID: commands run in that daemon session (agent/session_commands.h).
  SessionOpener open_session;
  // --backend and --allow-weaker kvm (agent/vm_command.h chooseBackend; session is set from
  // open_session).
  BackendFlags backend;
};

// Exit statuses of `corral run`.
inline constexpr int kRunFinished = 0;        // the root task called finish
inline constexpr int kRunFailed = 1;          // the model endpoint failed, or the run could not complete
inline constexpr int kRunIncomplete = 2;      // a budget ended the root task before finish
inline constexpr int kRunRefused = 125;       // refused before the run started (bad manifest, ...)

struct RunSummary {  // NOLINT(bugprone-exception-escape): false positive from the nlohmann::json member's special members
  int exit_code = kRunFailed;
  std::string run_id;
  std::string workspace;
  nlohmann::json body;  // result.json's body (also printed by --json)
};

// An Error: refused or failed before anything was recorded (exit 125).
Result<RunSummary> runManifest(const RunRequest& request);

// The short human summary `corral run` prints: what ran, what changed, what was refused,
// budget used.
std::string humanSummary(const RunSummary& s);

}  // namespace corral::agent
