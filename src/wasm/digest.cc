// SPDX-License-Identifier: Apache-2.0
// SHA-256 and hex through libsodium (crypto_hash_sha256, sodium_bin2hex).
#include "wasm/digest.h"

#include <sodium/crypto_hash_sha256.h>
#include <sodium/utils.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

namespace corral::wasm {
namespace {

// crypto_hash_sha256 has one portable implementation and no CPU dispatch, so it needs no
// sodium_init() (which would also set up a random source nothing here uses).
std::string hex(const unsigned char (&d)[crypto_hash_sha256_BYTES]) {
  char out[crypto_hash_sha256_BYTES * 2 + 1];
  sodium_bin2hex(out, sizeof(out), d, sizeof(d));
  return std::string(out, crypto_hash_sha256_BYTES * 2);
}

}  // namespace

std::string sha256Hex(std::string_view bytes) {
  unsigned char d[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(d, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  return hex(d);
}

Result<std::string> sha256HexOfFd(int fd, const std::string& what) {
  constexpr size_t kChunk = size_t{64} * 1024;
  crypto_hash_sha256_state st;
  crypto_hash_sha256_init(&st);
  std::unique_ptr<unsigned char[]> buf(new unsigned char[kChunk]);
  for (;;) {
    const ssize_t n = ::read(fd, buf.get(), kChunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sysError(what);
    if (n == 0) break;
    crypto_hash_sha256_update(&st, buf.get(), static_cast<unsigned long long>(n));
  }
  unsigned char d[crypto_hash_sha256_BYTES];
  crypto_hash_sha256_final(&st, d);
  return hex(d);
}

}  // namespace corral::wasm
