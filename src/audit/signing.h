// SPDX-License-Identifier: Apache-2.0
// Ed25519 keys (PKCS#8 / SPKI PEM) for signing result.json's commitments.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/secret.h"

typedef struct evp_pkey_st EVP_PKEY;  // NOLINT: OpenSSL's own spelling, kept out of the header

namespace corral::audit {

// The env var that may hold the signing key's PEM text (not a path).
inline constexpr std::string_view kSigningKeyEnv = "CORRAL_AUDIT_PRIVATE_KEY";
inline constexpr size_t kEd25519SignatureBytes = 64;

struct PkeyFree {
  void operator()(EVP_PKEY* key) const;
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

class SigningKey {
 public:
  // Parses an unencrypted Ed25519 private key (PKCS#8 PEM). Never prompts for a passphrase.
  static Result<SigningKey> fromPem(const Secret& pem);
  static Result<SigningKey> generate();

  // The 64-byte Ed25519 signature of message.
  Result<std::string> sign(std::string_view message) const;
  // SHA-256 (hex) of the public key's DER SubjectPublicKeyInfo: the key's fingerprint.
  const std::string& publicKeySpkiSha256() const { return spki_sha256_; }
  Result<std::string> publicKeyPem() const;   // SPKI PEM
  Result<Secret> privateKeyPem() const;       // PKCS#8 PEM, for keygen only

 private:
  SigningKey(PkeyPtr key, std::string spki_sha256) : key_(std::move(key)), spki_sha256_(std::move(spki_sha256)) {}
  PkeyPtr key_;
  std::string spki_sha256_;
};

class PublicKey {
 public:
  // Parses an Ed25519 public key (SPKI PEM, "BEGIN PUBLIC KEY").
  static Result<PublicKey> fromPem(std::string_view pem);
  bool verify(std::string_view message, std::string_view signature) const;
  const std::string& spkiSha256() const { return spki_sha256_; }

 private:
  PublicKey(PkeyPtr key, std::string spki_sha256) : key_(std::move(key)), spki_sha256_(std::move(spki_sha256)) {}
  PkeyPtr key_;
  std::string spki_sha256_;
};

// The operator's signing key PEM for a run: the file when key_file is non-empty (the
// `--signing-key FILE` flag), else $CORRAL_AUDIT_PRIVATE_KEY, else nullopt (unsigned).
// A file inside workspace is refused: the workspace is the model's, the key the operator's.
Result<std::optional<Secret>> loadSigningKeyPem(const std::string& key_file, const std::string& workspace);

}  // namespace corral::audit
