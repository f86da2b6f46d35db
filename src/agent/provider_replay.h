// SPDX-License-Identifier: Apache-2.0
// The replay provider: canned replies from a transcript file, one per call, for offline
// runs and tests of the agent loop.
#pragma once
#include <cstddef>
#include <vector>

#include "agent/provider.h"
#include "agent/replay_transcript.h"

namespace corral::agent {

class ReplayProvider final : public Provider {
 public:
  explicit ReplayProvider(ProviderConfig config);
  std::string_view name() const override { return "replay"; }
  // Reads (at most kMaxTranscriptBytes) and strictly parses the transcript.
  Result<void> preflight() override;
  // The next reply, or its injected error; past the last one kInvalidArgument (final).
  Result<ModelReply> complete(const std::vector<Message>& conversation, const std::vector<ToolSpec>& tools) override;

 private:
  ProviderConfig config_;
  bool loaded_ = false;
  std::vector<ReplayReply> replies_;
  size_t next_ = 0;
};

}  // namespace corral::agent
