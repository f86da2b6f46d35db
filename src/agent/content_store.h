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
  // Opens (creating) .corral/blobs beneath the record directory, never through a symlink;
  // refuses one that holds a directory (a blob's name rename(2) could not replace).
  static Result<ContentStore> open(const UniqueFd& record_dir);
  // Stores bytes as blobs/<sha256> (random O_EXCL temp file + rename, audit::replaceFileAt;
  // a blob already there is kept only when it holds exactly these bytes) and returns the hash.
  Result<std::string> keep(std::string_view bytes);
  uint64_t stored() const { return stored_; }

 private:
  explicit ContentStore(UniqueFd dir) : dir_(std::move(dir)) {}
  UniqueFd dir_;
  uint64_t stored_ = 0;
};

}  // namespace corral::agent
