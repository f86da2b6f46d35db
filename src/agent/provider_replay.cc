// SPDX-License-Identifier: Apache-2.0
// Replay provider: plays a transcript's replies in order.
#include "agent/provider_replay.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "base/sha256.h"
#include "base/read_fd.h"
#include "base/unique_fd.h"

namespace corral::agent {

ReplayProvider::ReplayProvider(ProviderConfig config) : config_(std::move(config)) {}

Result<void> ReplayProvider::preflight() {
  const std::string& path = config_.transcript_path;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return sysError("replay: open transcript " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sysError("replay: stat transcript " + path);
  if (!S_ISREG(st.st_mode)) return Error(Errc::kInvalidArgument, "replay: transcript " + path + " is not a regular file");
  ASSIGN_OR_RETURN(std::string bytes, readUpTo(fd.get(), kMaxTranscriptBytes, "replay: read transcript " + path));
  if (bytes.size() > kMaxTranscriptBytes)
    return Error(Errc::kInvalidArgument,
                 "replay: transcript " + path + " is larger than " + std::to_string(kMaxTranscriptBytes) + " bytes");
  ASSIGN_OR_RETURN(replies_, parseReplayTranscript(bytes));
  loaded_ = true;
  next_ = 0;
  return {};
}

Result<ModelReply> ReplayProvider::complete(const std::vector<Message>&, const std::vector<ToolSpec>&) {
  if (!loaded_) RETURN_IF_ERROR(preflight());
  if (next_ >= replies_.size())
    return Error(Errc::kInvalidArgument, "replay: transcript exhausted after " + std::to_string(replies_.size()) + " replies");
  const size_t index = next_++;
  const ReplayReply& r = replies_[index];
  const std::string where = "replay: reply " + std::to_string(index);
  if (r.error == InjectedError::kTransient) return Error(Errc::kIo, where + ": injected transient error");
  if (r.error == InjectedError::kMalformed) return Error(Errc::kInvalidArgument, where + ": injected malformed response");
  ModelReply reply = r.reply;
  reply.response_bytes = r.wire.size();
  reply.response_sha256 = audit::sha256Hex(r.wire);
  return reply;
}

}  // namespace corral::agent
