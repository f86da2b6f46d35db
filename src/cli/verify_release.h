// SPDX-License-Identifier: Apache-2.0
// `corral verify-release DIR --public-key PEM`: SHA256SUMS's Ed25519 signature, then every file it lists.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "audit/signing.h"
#include "base/result.h"

namespace corral::cli {

struct ChecksumLine {
  std::string sha256;  // 64 lowercase hex digits
  std::string name;    // a plain file name in the release directory
};

// Parses sha256sum's output strictly: every line "<64 hex>  <name>" (or " *<name>"), names
// unique, plain (no '/', not "." or ".."), printable; at least one line; LF line ends.
Result<std::vector<ChecksumLine>> parseSha256Sums(std::string_view text);

struct ReleaseVerified {
  size_t files = 0;
  std::string key_spki_sha256;
};

// Checks DIR/SHA256SUMS.sig (64 raw bytes) over DIR/SHA256SUMS's bytes with key first, then
// each listed file's SHA-256 (regular files beneath DIR only: no symlink, no way out).
Result<ReleaseVerified> verifyReleaseDir(const std::string& dir, const audit::PublicKey& key);

int verifyReleaseMain(const std::vector<std::string>& args);

}  // namespace corral::cli
