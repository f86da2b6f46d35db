// SPDX-License-Identifier: Apache-2.0
// Verifying a workspace's audit record: the chain, the commitments, the signature, a trusted head.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "audit/signing.h"
#include "base/result.h"

namespace corral::audit {

struct VerifyOptions {
  const PublicKey* public_key = nullptr;   // require a valid signature by this key
  std::optional<std::string> trusted_head;  // require the trace to end at this head (hex)
  // Require each output the run applied to the workspace ("applied": "copied" in the body)
  // to be there still, as it wrote it (its sha256). Off: the record alone is checked.
  bool check_outputs = true;
};

enum class SignatureStatus { kAbsent, kNotChecked, kValid };

struct VerifyReport {
  bool ok = false;
  // The first failure, one line that says what and where:
  // "trace line 7: prev does not match line 6".
  std::string failure;
  // What was established before any failure (empty/zero when not reached).
  uint64_t trace_count = 0;
  std::string trace_head;
  std::string manifest_sha256;
  std::string result_body_sha256;
  SignatureStatus signature = SignatureStatus::kAbsent;
  std::string public_key_spki_sha256;  // as result.json names it
  // The run that wrote result.json, from its run_start line: where it began (0: no run_start)
  // and the lines it found already in the record, with how they were sealed then (see
  // docs/audit-format.md, "Lines a run inherits"). A signature covers those lines too, but
  // vouches only that they were there, not how they were made.
  uint64_t run_start_line = 0;
  uint64_t prior_lines = 0;
  std::string prior;  // "" when the run_start does not say (records before this field)
  // The widest prefix any run in the trace found not sealed by a result it could check
  // (0: none): lines 1..unvouched_lines, found by the run starting at unvouched_run_start_line.
  uint64_t unvouched_lines = 0;
  uint64_t unvouched_run_start_line = 0;
  std::string unvouched_prior;
  // Outputs the run applied that were compared with the workspace, and matched.
  uint64_t outputs_checked = 0;
};

// Verifies WORKSPACE/.corral. Returns an Error only when the workspace itself cannot be
// opened (bad usage); a damaged or incomplete record is a report with ok == false.
Result<VerifyReport> verifyRecord(const std::string& workspace, const VerifyOptions& options);

}  // namespace corral::audit
