// SPDX-License-Identifier: Apache-2.0
// Host side of declared outputs: rebuilds what the guest reports (kOutput/kData frames) in a
// private staging tree, so that copy-back (sandbox/workspace.h) and its checks decide what
// reaches the host workspace, exactly as for the namespace backend.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "vm/protocol.h"

namespace corral::vm {

class OutputReceiver {
 public:
  // staging: an empty directory only this process uses. declared: the spec's outputs; the
  // guest may report only those, each once. max_bytes: the workspace size (all outputs).
  static Result<OutputReceiver> create(const std::string& staging, std::vector<std::string> declared, uint64_t max_bytes);

  Result<void> onHeader(std::string_view json);
  Result<void> onData(std::string_view bytes);
  // No output may be left half sent when the guest says it is done.
  Result<void> finish();
  // The staging workspace root, for workspace::copyBack.
  int root() const { return ws_.get(); }

 private:
  Result<void> complete();

  UniqueFd top_, ws_, links_;
  std::vector<std::string> declared_;
  std::set<std::string> seen_;
  uint64_t max_bytes_ = 0, total_ = 0;
  bool open_ = false;  // a header whose data is still arriving
  protocol::OutputHeader current_;
  std::string pending_;  // symlink target bytes
  UniqueFd file_;
  uint64_t received_ = 0;
  uint64_t link_seq_ = 0;
};

}  // namespace corral::vm
