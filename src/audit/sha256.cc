// SPDX-License-Identifier: Apache-2.0
// SHA-256 through OpenSSL's one-shot API, and lowercase hex.
#include "audit/sha256.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <cstdlib>

namespace corral::audit {

Sha256Digest sha256(std::string_view bytes) {
  Sha256Digest d{};
  ::SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), d.data());
  return d;
}

std::string toHex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

std::string sha256Hex(std::string_view bytes) {
  Sha256Digest d = sha256(bytes);
  return toHex(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
}

Sha256Stream::Sha256Stream() : ctx_(EVP_MD_CTX_new()) {
  // Allocation failure of a few hundred bytes: nothing sensible to continue with.
  if (ctx_ == nullptr || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) != 1) std::abort();
}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256Stream::update(std::string_view bytes) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), bytes.data(), bytes.size());
}

std::string Sha256Stream::hexDigest() {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), d, &n);
  return toHex(std::string_view(reinterpret_cast<const char*>(d), n));
}

std::string Sha256Stream::peekHex() const {
  EVP_MD_CTX* copy = EVP_MD_CTX_new();
  if (copy == nullptr || EVP_MD_CTX_copy_ex(copy, static_cast<EVP_MD_CTX*>(ctx_)) != 1) std::abort();
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(copy, d, &n);
  EVP_MD_CTX_free(copy);
  return toHex(std::string_view(reinterpret_cast<const char*>(d), n));
}

bool isSha256Hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace corral::audit
