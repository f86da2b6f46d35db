// SPDX-License-Identifier: Apache-2.0
// `corral run --trace-content full`: contents the trace names by SHA-256 (task text, model
// text and tool arguments, files read and written, command output as returned to the model,
// mailbox bodies, summaries) are also kept, content-addressed, as .corral/blobs/<sha256>.
// The trace itself is unchanged: it still holds only hashes, so the chain and its limits
// are the same either way, and each blob is checkable against the hash that names it.
#pragma once
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::agent {

class ContentStore {
 public:
  // Opens (creating) .corral/blobs beneath the record directory, never through a symlink.
  static Result<ContentStore> open(const UniqueFd& record_dir);
  // Stores bytes as blobs/<sha256> (temp file + rename; kept as is when already there) and
  // returns the hash.
  Result<std::string> keep(std::string_view bytes);
  uint64_t stored() const { return stored_; }

 private:
  explicit ContentStore(UniqueFd dir) : dir_(std::move(dir)) {}
  UniqueFd dir_;
  uint64_t stored_ = 0;
};

}  // namespace corral::agent
