// SPDX-License-Identifier: Apache-2.0
// WORKSPACE/.corral/mem: a git repository receiving one commit per run (runs/<run-id>.json),
// driven by the host's git through the same git gate as the model's commands (pinned config,
// hooks off, GIT_DIR/GIT_WORK_TREE explicit so git never discovers an enclosing repository).
// Without git the run continues on file-backed memory (the file, no commit) and says so.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace corral::agent {

struct MemoryOutcome {
  std::string status;  // "committed" or "file" (git unavailable)
  std::string commit;  // when committed
  std::string reason;  // why "file"
};

// Before a run: refuses (kRefused) a store that is not a real directory (a symlink, a file),
// whose .git is not a real directory (a gitdir file pointing elsewhere, a symlink), that
// has content but no .git (git would resolve into an enclosing repository), or whose
// .git/config names programs git would run (policy::checkGitConfig).
Result<void> checkMemoryStore(const std::string& workspace);

// After a run: writes runs/<run_id>.json and commits it. The git binary is $CORRAL_GIT when
// set ("none" disables git), else /usr/bin/git.
Result<MemoryOutcome> commitRunMemory(const std::string& workspace, const std::string& run_id,
                                      const nlohmann::json& record);

}  // namespace corral::agent
