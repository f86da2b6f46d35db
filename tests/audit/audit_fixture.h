// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the audit claim tests: temp workspaces, sample records, file surgery.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "audit/signing.h"
#include "audit/verify.h"

namespace corral::audit::testing {

// A fresh directory under $TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string readFile(const std::string& path);
void writeFile(const std::string& path, const std::string& bytes);
// Lines without their '\n'; writeLines adds one after each.
std::vector<std::string> readLines(const std::string& path);
void writeLines(const std::string& path, const std::vector<std::string>& lines);

// XORs one byte in place (pread/pwrite, no truncation: ext4's auto_da_alloc would turn
// every truncate-and-rewrite into a flush, and the bit-flip properties do thousands).
void xorByte(const std::string& path, size_t offset, unsigned char mask);

std::string tracePath(const std::string& workspace);
std::string resultPath(const std::string& workspace);

// A run-like record in workspace/.corral: entries trace lines (run_start, manifest, tool
// calls, a refusal, budget, run_end) and result.json, signed when key is non-null.
// Fails the current test on any error.
void writeSampleRecord(const std::string& workspace, int entries, const SigningKey* key);
// Rewrites result.json to commit to the trace as it is now (what a forger without the key can do).
void recommit(const std::string& workspace, const SigningKey* key);

SigningKey newKey();
PublicKey publicKeyOf(const SigningKey& key);

VerifyReport verifyWorkspace(const std::string& workspace, const PublicKey* key = nullptr,
                             std::optional<std::string> trusted_head = std::nullopt);

}  // namespace corral::audit::testing
