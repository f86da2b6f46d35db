// SPDX-License-Identifier: Apache-2.0
// What one run shares across its agent loops (the root task and every spawned subtask),
// and what one loop owns. Held by the runner; tools and the loop receive references.
#pragma once
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/content_store.h"
#include "agent/mailbox.h"
#include "agent/private_workspace.h"
#include "agent/run_egress.h"
#include "agent/session_commands.h"
#include "base/sha256.h"
#include "audit/trace.h"
#include "policy/budget.h"
#include "policy/manifest.h"

namespace corral::agent {

struct VmChoice;  // agent/vm_command.h

enum class TraceContent { kHashes, kFull };

struct PendingTask {
  std::string id;
  std::string parent_id;
  policy::Manifest manifest;  // attenuated from the parent's
};

struct TaskOutcome {
  std::string id;
  std::string status;          // "finished", "budget_exhausted", "model_error", "error"
  std::string reason;          // one line
  std::string summary;         // the model's finish() text (never traced: only its hash)
  uint32_t turns = 0;
  uint32_t model_calls = 0;
};

struct RunCounters {
  uint32_t tool_calls = 0;
  uint32_t refusals = 0;
  uint32_t commands = 0;
  uint32_t writes = 0;
  uint64_t input_tokens = 0;
  uint64_t output_tokens = 0;
};

struct RunContext {
  std::string run_id;
  const policy::Manifest* root = nullptr;
  PrivateWorkspace* workspace = nullptr;
  audit::TraceWriter* trace = nullptr;
  policy::RunBudget* budget = nullptr;
  Mailbox* mailbox = nullptr;
  bool apply = false;
  TraceContent trace_content = TraceContent::kHashes;
  ContentStore* content = nullptr;  // set with --trace-content full
  RunEgress* egress = nullptr;      // set when the manifest grants network or credentials
  CommandSession* session = nullptr;  // --session: commands run there (the session's own egress)
  const VmChoice* vm = nullptr;  // the VM backend: each command in a fresh VM (vm_command.h)
  // Set when an applied `run` cannot be sandboxed on this host: the missing facility.
  std::optional<std::string> sandbox_unavailable;
  std::function<policy::Millis()> now;  // monotonic milliseconds
  std::deque<PendingTask> queue;
  uint32_t next_task = 1;
  RunCounters counters;
  std::vector<TaskOutcome> tasks;

  // Appends a trace entry; a failed append is fatal for the run (the record must be whole),
  // so callers propagate it. Entries bound what a model or a workspace controls (tools::
  // boundedTraceList), but one that still outgrows the trace's line limit must not leave the
  // run unsealed: it is recorded by type, size and hash instead ("entry_oversized").
  Result<void> record(std::string_view type, const nlohmann::json& data) {
    auto appended = trace->append(type, data);
    if (appended.ok() || appended.error().code() != static_cast<int>(Errc::kLimit)) return appended;
    const std::string text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return trace->append("entry_oversized", {{"type", type}, {"bytes", text.size()}, {"sha256", audit::sha256Hex(text)}});
  }
  // With --trace-content full, keeps bytes as .corral/blobs/<sha256>; otherwise nothing.
  Result<void> keep(std::string_view bytes) {
    if (content == nullptr) return {};
    auto kept = content->keep(bytes);
    if (!kept.ok()) return kept.error();
    return {};
  }
};

struct TaskState {
  std::string id;               // "root", "t1", ...
  const policy::Manifest* manifest = nullptr;  // this loop's (attenuated) manifest
  policy::TaskBudget* budget = nullptr;
  uint32_t turn = 0;
  bool finished = false;
  std::string summary;
};

}  // namespace corral::agent
