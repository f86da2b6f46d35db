// SPDX-License-Identifier: Apache-2.0
// The trace line format and its hash chain, shared by the writer and by verify.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "base/result.h"

namespace corral::audit {

inline constexpr int kTraceVersion = 1;
// A line (without its newline) is at most this long; verify refuses longer ones, so a
// hostile trace cannot make it buffer without bound.
inline constexpr size_t kMaxTraceLineBytes = size_t{64} * 1024;
// No string in an entry (values or keys) may be longer: the trace holds ids, sizes, hashes
// and decisions; contents are recorded by their SHA-256 instead.
inline constexpr size_t kMaxTraceStringBytes = 4096;

// Where a chain stands: count entries, head = SHA-256 (hex) of the last line, or 64 zeros.
struct ChainState {
  uint64_t count = 0;
  std::string head = std::string(kZeroHash);
  // Runs append to the trace they find, and each run_start records how the lines before it
  // were sealed (data.prior_lines, data.prior; docs/audit-format.md). The last run_start seen
  // (1-based line, 0 for none) with its numbers, and the widest prefix any run found without
  // a signature it could check (prior other than "none" and "sealed-signed-same-key", or not
  // recorded): a later signed run covers those lines but cannot vouch for them.
  uint64_t last_run_start = 0;
  uint64_t last_prior_lines = 0;
  std::string last_prior;
  uint64_t unvouched_lines = 0;
  uint64_t unvouched_run_start = 0;
  std::string unvouched_prior;
};

// Refuses (Errc::kRefused) any string in data longer than kMaxTraceStringBytes, naming the
// path ("data.args[3]") and size, never the value.
Result<void> checkTraceData(const nlohmann::json& data);

// [a-z][a-z0-9_]{0,31}: "run_start", "tool_call", ...
bool isTraceType(std::string_view type);

// The canonical line (no newline) of entry number state.count chained after state.head.
Result<std::string> encodeTraceLine(const ChainState& state, int64_t ts_ms, std::string_view type,
                                    const nlohmann::json& data);

// Checks lines one at a time, in file order. Errors name the 1-based line:
// "trace line 7: prev does not match line 6".
class ChainVerifier {
 public:
  // line excludes its '\n'.
  Result<void> addLine(std::string_view line);
  const ChainState& state() const { return state_; }

 private:
  void accept(std::string_view line);  // a verified line: advance head and count
  ChainState state_;
};

// Verifies a trace file from offset 0 (streaming, pread; the fd's offset is untouched).
// The file must be empty or end in '\n'; a final line without one is reported as truncated.
Result<ChainState> verifyTraceFd(int fd);

}  // namespace corral::audit
