// SPDX-License-Identifier: Apache-2.0
// TraceWriter: appends hash-chained entries to .corral/trace.jsonl after verifying what is there.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "audit/trace_chain.h"
#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::audit {

// When an appended entry is durable.
enum class TraceSync {
  kEachEntry,  // default: fdatasync after every entry, so a crash loses no appended entry
  kBatch,      // no sync per entry; the caller calls sync() (finishRecord() does) before it
               // commits the head anywhere. A crash may lose the unsynced tail, never the
               // chain's integrity: each entry is one write(2) and verify reports a torn line.
};

struct TraceOptions {
  TraceSync sync = TraceSync::kEachEntry;
  std::function<int64_t()> clock_ms;  // empty: CLOCK_REALTIME in milliseconds
};

class TraceWriter {
 public:
  // Opens (or creates, mode 0644) trace.jsonl in the record directory, takes an exclusive
  // flock for the writer's lifetime (a second writer is refused), and verifies the whole
  // existing chain first: a broken chain is refused with the verifier's error, which names
  // the line ("trace line 7: prev does not match line 6").
  static Result<TraceWriter> open(const UniqueFd& record_dir, TraceOptions options = {});
  // The same for WORKSPACE/.corral/trace.jsonl, creating .corral when missing.
  static Result<TraceWriter> openInWorkspace(const std::string& workspace, TraceOptions options = {});

  // Appends {"v":1,"seq":count(),"prev":head(),"ts_ms":now,"type":type,"data":data} as one
  // write(2) of the full line. data must be an object of ids, sizes, hashes and decisions:
  // a string longer than kMaxTraceStringBytes anywhere in it is refused (Errc::kRefused),
  // so contents cannot be traced by accident; hash them with sha256Hex() instead.
  // A failed write is rolled back (ftruncate); if even that fails, the writer refuses
  // every later call.
  Result<void> append(std::string_view type, const nlohmann::json& data);
  // fdatasync: what kBatch callers call before committing head().
  Result<void> sync();

  const std::string& head() const { return state_.head; }
  uint64_t count() const { return state_.count; }

 private:
  TraceWriter(UniqueFd fd, ChainState state, uint64_t size, TraceOptions options)
      : fd_(std::move(fd)), state_(std::move(state)), size_(size), options_(std::move(options)) {}

  UniqueFd fd_;
  ChainState state_;
  uint64_t size_;  // bytes in the file: where a failed append is truncated back to
  TraceOptions options_;
  bool unusable_ = false;
};

}  // namespace corral::audit
