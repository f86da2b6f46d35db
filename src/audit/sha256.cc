// SPDX-License-Identifier: Apache-2.0
// SHA-256 through OpenSSL's one-shot API, and lowercase hex.
#include "audit/sha256.h"

#include <openssl/sha.h>

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

bool isSha256Hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace corral::audit
