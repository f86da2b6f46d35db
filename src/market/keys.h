// SPDX-License-Identifier: Apache-2.0
// libsodium for the market: X25519 key checks, API keys and their hashes, sealed boxes.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace corral::market::keys {

// sodium_init once; false when libsodium cannot start (no entropy source).
bool ready();

std::string toHex(std::string_view bytes);
Result<std::string> fromHex(std::string_view hex);
std::string toBase64(std::string_view bytes);
Result<std::string> fromBase64(std::string_view b64);

// A 32-byte X25519 public key in lowercase hex, canonical (u < 2^255 - 19, top bit clear,
// so one key has one spelling) and not of small order (its shared secret with anything
// would be all zeros). Returns the 32 raw bytes.
Result<std::string> parsePublicKey(std::string_view hex);

struct KeyPair {
  std::string public_key;  // 32 raw bytes
  std::string secret_key;  // 32 raw bytes
};
KeyPair newKeyPair();

// "cmk_" + 64 hex digits from the CSPRNG; stored only as hashApiKey's BLAKE2b-256 (a fast
// hash is enough for 256 random bits: there is nothing to guess offline).
std::string newApiKey();
std::string hashApiKey(std::string_view api_key);
// Constant-time comparison of two equal-length strings.
bool equal(std::string_view a, std::string_view b);

// Client side. secretbox: nonce || MAC || ciphertext under a fresh 32-byte key.
std::string newSymmetricKey();
std::string secretSeal(std::string_view key, std::string_view plaintext);
Result<std::string> secretOpen(std::string_view key, std::string_view sealed);
// Sealed box to an X25519 public key (anonymous sender).
Result<std::string> sealTo(std::string_view public_key, std::string_view message);
Result<std::string> openSealed(const KeyPair& kp, std::string_view sealed);

}  // namespace corral::market::keys
