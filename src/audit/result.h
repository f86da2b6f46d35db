// SPDX-License-Identifier: Apache-2.0
// .corral/result.json: commitments to manifest, trace and body, and an optional Ed25519 signature.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "audit/signing.h"
#include "audit/trace.h"
#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::audit {

inline constexpr int kResultVersion = 1;
inline constexpr size_t kMaxResultBytes = size_t{4} * 1024 * 1024;

// What the signature covers, and nothing else.
struct Commitments {
  std::string manifest_sha256;     // SHA-256 of the frozen manifest (the runner defines its bytes)
  std::string trace_head;          // SHA-256 of the last trace line, or 64 zeros
  uint64_t trace_count = 0;        // number of trace lines
  std::string result_body_sha256;  // SHA-256 of the canonical JSON of body
};

struct ResultSignature {
  std::string public_key_spki_sha256;
  std::string sig;  // 64 raw bytes (base64 in the file)
};

// NOLINTNEXTLINE(bugprone-exception-escape): its implicit moves cannot throw (nlohmann::json moves are noexcept)
struct ResultRecord {
  Commitments commitments;
  nlohmann::json body;  // an object
  std::optional<ResultSignature> signature;
};

// The canonical JSON of the commitments object: the exact bytes the signature covers.
Result<std::string> signedMessage(const Commitments& c);

// result.json's bytes (canonical JSON and one '\n'): hashes body (an object), commits, and
// signs the commitments when key is non-null.
Result<std::string> encodeResult(std::string_view manifest_sha256, std::string_view trace_head,
                                 uint64_t trace_count, const nlohmann::json& body, const SigningKey* key);

// Parses result.json strictly: canonical, exact fields, well-formed hashes and signature.
// Does not check the commitments against anything (verify does).
Result<ResultRecord> parseResult(std::string_view bytes);

// Replaces result.json atomically: a temp file in the same directory, fsync, rename, fsync
// of the directory. A crash leaves the old result or the new one, never half of either.
Result<void> writeResultFile(const UniqueFd& record_dir, std::string_view bytes);

// How the lines a run finds in the record were sealed when it begins, for its run_start
// entry (docs/audit-format.md, "Lines a run inherits"): "none" (an empty trace), "unsealed"
// (no result.json, or one that does not commit exactly this head, count and body: a crashed
// run, or lines written by something else), "sealed-unsigned", "sealed-signed-same-key" (the
// signature verified with key's public half), "sealed-signature-invalid", or
// "sealed-signed-other-key" (a key this run cannot check).
std::string priorSeal(const UniqueFd& record_dir, uint64_t trace_count, std::string_view trace_head, const SigningKey* key);

// What `corral run` calls last: syncs the trace (for TraceSync::kBatch), then commits its
// head and count with the manifest hash and body, signed when key is non-null.
Result<void> finishRecord(const UniqueFd& record_dir, TraceWriter& trace, std::string_view manifest_sha256,
                          const nlohmann::json& body, const SigningKey* key);

}  // namespace corral::audit
