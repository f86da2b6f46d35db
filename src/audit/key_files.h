// SPDX-License-Identifier: Apache-2.0
// `corral keygen`'s files: a fresh Ed25519 pair as PKCS#8 (0600) and SPKI PEM, never overwritten.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace corral::audit {

inline constexpr std::string_view kPrivateKeyFileName = "audit-ed25519-private.pem";
inline constexpr std::string_view kPublicKeyFileName = "audit-ed25519-public.pem";

struct KeyPairFiles {
  std::string private_path;
  std::string public_path;
  std::string spki_sha256;  // the public key's fingerprint, as result.json names it
};

// Creates dir (0700) when missing, then both files with O_EXCL: the private key mode 0600,
// the public key 0644. If either file exists, nothing is written (Errc::kRefused).
Result<KeyPairFiles> writeKeyPair(const std::string& dir);

}  // namespace corral::audit
