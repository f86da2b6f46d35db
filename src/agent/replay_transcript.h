// SPDX-License-Identifier: Apache-2.0
// The replay provider's transcript: a strictly parsed list of canned model replies (format
// in docs/providers.md). Pure: bytes in, replies out.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/conversation.h"
#include "base/result.h"

namespace corral::agent {

inline constexpr uint64_t kMaxTranscriptBytes = uint64_t{16} << 20;  // 16 MiB

enum class InjectedError { kTransient, kMalformed };

struct ReplayReply {
  ModelReply reply;                    // ids "call_<reply>_<index>", both from 0
  std::optional<InjectedError> error;  // the call fails instead of returning reply
  std::string wire;                    // this reply's compact JSON: what response_bytes/sha256 cover
};

// Refuses (kInvalidArgument, "replay: <path>: <rule>"): invalid JSON, duplicate keys,
// unknown fields, version other than 1, no replies, a tool call with both or neither of
// "arguments" (object) and "arguments_raw" (string), an empty tool name, negative or
// fractional token counts, and an "error" reply that has any other field.
Result<std::vector<ReplayReply>> parseReplayTranscript(std::string_view bytes);

}  // namespace corral::agent
