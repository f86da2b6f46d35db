// SPDX-License-Identifier: Apache-2.0
// libsodium calls behind market::keys; nothing here logs.
#include "market/keys.h"

#include <sodium.h>


namespace corral::market::keys {

bool ready() {
  static const bool ok = sodium_init() >= 0;
  return ok;
}

std::string toHex(std::string_view bytes) {
  std::string out(bytes.size() * 2 + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  out.pop_back();
  return out;
}

Result<std::string> fromHex(std::string_view hex) {
  std::string out(hex.size() / 2 + 1, '\0');
  size_t len = 0;
  const char* end = nullptr;
  if (sodium_hex2bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), hex.data(), hex.size(), nullptr, &len,
                     &end) != 0 ||
      end != hex.data() + hex.size())
    return Error(Errc::kInvalidArgument, "not hex");
  out.resize(len);
  return out;
}

std::string toBase64(std::string_view bytes) {
  const size_t n = sodium_base64_encoded_len(bytes.size(), sodium_base64_VARIANT_ORIGINAL);
  std::string out(n, '\0');
  sodium_bin2base64(out.data(), n, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                    sodium_base64_VARIANT_ORIGINAL);
  out.resize(n - 1);
  return out;
}

Result<std::string> fromBase64(std::string_view b64) {
  std::string out(b64.size() / 4 * 3 + 3, '\0');
  size_t len = 0;
  const char* end = nullptr;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), b64.data(), b64.size(), nullptr,
                        &len, &end, sodium_base64_VARIANT_ORIGINAL) != 0 ||
      end != b64.data() + b64.size())
    return Error(Errc::kInvalidArgument, "not base64");
  out.resize(len);
  return out;
}

Result<std::string> parsePublicKey(std::string_view hex) {
  if (!ready()) return Error(Errc::kUnsupported, "libsodium did not start");
  if (hex.size() != 64) return Error(Errc::kInvalidArgument, "public key must be 64 hex digits");
  for (char c : hex)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return Error(Errc::kInvalidArgument, "public key must be lowercase hex");
  ASSIGN_OR_RETURN(std::string raw, fromHex(hex));
  const auto* u = reinterpret_cast<const unsigned char*>(raw.data());
  // Little-endian u. Top bit set, or u >= p = 2^255 - 19 (0xed, then 0xff.., then 0x7f):
  // X25519 would read the same point, so a reused key could hide behind a second spelling.
  if (u[31] & 0x80) return Error(Errc::kInvalidArgument, "public key is not canonical");
  bool ge_p = u[31] == 0x7f && u[0] >= 0xed;
  for (int i = 1; i < 31 && ge_p; ++i) ge_p = u[i] == 0xff;
  if (ge_p) return Error(Errc::kInvalidArgument, "public key is not canonical");
  unsigned char scalar[crypto_scalarmult_SCALARBYTES];
  unsigned char shared[crypto_scalarmult_BYTES];
  randombytes_buf(scalar, sizeof scalar);
  // libsodium refuses (-1) when the product is all zeros: exactly the small-order points.
  const int rc = crypto_scalarmult(shared, scalar, u);
  sodium_memzero(scalar, sizeof scalar);
  sodium_memzero(shared, sizeof shared);
  if (rc != 0) return Error(Errc::kInvalidArgument, "public key is a low-order point");
  return raw;
}

KeyPair newKeyPair() {
  (void)ready();
  unsigned char pk[crypto_box_PUBLICKEYBYTES];
  unsigned char sk[crypto_box_SECRETKEYBYTES];
  crypto_box_keypair(pk, sk);
  KeyPair kp{std::string(reinterpret_cast<char*>(pk), sizeof pk), std::string(reinterpret_cast<char*>(sk), sizeof sk)};
  sodium_memzero(sk, sizeof sk);
  return kp;
}

std::string newApiKey() {
  (void)ready();
  unsigned char b[32];
  randombytes_buf(b, sizeof b);
  return "cmk_" + toHex(std::string_view(reinterpret_cast<char*>(b), sizeof b));
}

std::string hashApiKey(std::string_view api_key) {
  (void)ready();
  unsigned char h[32];
  crypto_generichash(h, sizeof h, reinterpret_cast<const unsigned char*>(api_key.data()), api_key.size(), nullptr, 0);
  return toHex(std::string_view(reinterpret_cast<char*>(h), sizeof h));
}

bool equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string newSymmetricKey() {
  (void)ready();
  std::string k(crypto_secretbox_KEYBYTES, '\0');
  crypto_secretbox_keygen(reinterpret_cast<unsigned char*>(k.data()));
  return k;
}

std::string secretSeal(std::string_view key, std::string_view plaintext) {
  (void)ready();
  std::string out(crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + plaintext.size(), '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  randombytes_buf(o, crypto_secretbox_NONCEBYTES);
  crypto_secretbox_easy(o + crypto_secretbox_NONCEBYTES, reinterpret_cast<const unsigned char*>(plaintext.data()),
                        plaintext.size(), o, reinterpret_cast<const unsigned char*>(key.data()));
  return out;
}

Result<std::string> secretOpen(std::string_view key, std::string_view sealed) {
  (void)ready();
  if (key.size() != crypto_secretbox_KEYBYTES || sealed.size() < crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES)
    return Error(Errc::kInvalidArgument, "sealed data too short");
  std::string out(sealed.size() - crypto_secretbox_NONCEBYTES - crypto_secretbox_MACBYTES, '\0');
  const auto* s = reinterpret_cast<const unsigned char*>(sealed.data());
  if (crypto_secretbox_open_easy(reinterpret_cast<unsigned char*>(out.data()), s + crypto_secretbox_NONCEBYTES,
                                 sealed.size() - crypto_secretbox_NONCEBYTES, s,
                                 reinterpret_cast<const unsigned char*>(key.data())) != 0)
    return Error(Errc::kRefused, "sealed data does not open with this key");
  return out;
}

Result<std::string> sealTo(std::string_view public_key, std::string_view message) {
  (void)ready();
  if (public_key.size() != crypto_box_PUBLICKEYBYTES) return Error(Errc::kInvalidArgument, "bad public key length");
  std::string out(message.size() + crypto_box_SEALBYTES, '\0');
  if (crypto_box_seal(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(message.data()),
                      message.size(), reinterpret_cast<const unsigned char*>(public_key.data())) != 0)
    return Error(Errc::kInvalidArgument, "sealed box refused the key");
  return out;
}

Result<std::string> openSealed(const KeyPair& kp, std::string_view sealed) {
  (void)ready();
  if (sealed.size() < crypto_box_SEALBYTES || kp.public_key.size() != 32 || kp.secret_key.size() != 32)
    return Error(Errc::kInvalidArgument, "sealed box too short");
  std::string out(sealed.size() - crypto_box_SEALBYTES, '\0');
  if (crypto_box_seal_open(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(sealed.data()),
                           sealed.size(), reinterpret_cast<const unsigned char*>(kp.public_key.data()),
                           reinterpret_cast<const unsigned char*>(kp.secret_key.data())) != 0)
    return Error(Errc::kRefused, "sealed box does not open with this key");
  return out;
}

}  // namespace corral::market::keys
