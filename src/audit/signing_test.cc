// SPDX-License-Identifier: Apache-2.0
// Ed25519 keys: PEM round trips, refusing other key types and encrypted keys, key loading.
#include "audit/signing.h"

#include <stdlib.h>

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "audit_fixture.h"

namespace corral::audit {
namespace {

std::string pemOf(EVP_PKEY* k, bool encrypted) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (encrypted)
    PEM_write_bio_PKCS8PrivateKey(bio, k, EVP_aes_256_cbc(), "pw", 2, nullptr, nullptr);
  else
    PEM_write_bio_PrivateKey(bio, k, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

TEST(Ed25519, PemRoundTripSignAndVerify) {
  auto key = SigningKey::generate();
  ASSERT_TRUE(key.ok());
  auto pem = key->privateKeyPem();
  ASSERT_TRUE(pem.ok());
  EXPECT_EQ(pem->revealForInjection().rfind("-----BEGIN PRIVATE KEY-----", 0), 0u) << "not PKCS#8";
  auto again = SigningKey::fromPem(*pem);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->publicKeySpkiSha256(), key->publicKeySpkiSha256());
  auto pub_pem = key->publicKeyPem();
  ASSERT_TRUE(pub_pem.ok());
  EXPECT_EQ(pub_pem->rfind("-----BEGIN PUBLIC KEY-----", 0), 0u) << "not SPKI";
  auto pub = PublicKey::fromPem(*pub_pem);
  ASSERT_TRUE(pub.ok());
  EXPECT_EQ(pub->spkiSha256(), key->publicKeySpkiSha256());
  auto sig = again->sign("message");
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(sig->size(), 64u);
  EXPECT_TRUE(pub->verify("message", *sig));
  EXPECT_FALSE(pub->verify("messagE", *sig));
  EXPECT_FALSE(pub->verify("message", sig->substr(1)));
}

TEST(Ed25519, RefusesOtherKeyTypesEncryptedKeysAndGarbage) {
  EVP_PKEY* ec = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  ASSERT_NE(ec, nullptr);
  auto r = SigningKey::fromPem(Secret(pemOf(ec, false)));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "signing key is not an Ed25519 key");
  EVP_PKEY_free(ec);

  EVP_PKEY* ed = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  ASSERT_NE(ed, nullptr);
  // Encrypted: refused without a passphrase prompt (the test would hang on a tty otherwise).
  auto enc = SigningKey::fromPem(Secret(pemOf(ed, true)));
  ASSERT_FALSE(enc.ok());
  EXPECT_EQ(enc.error().message(), "signing key is not an unencrypted PKCS#8 PEM private key");
  EVP_PKEY_free(ed);

  EXPECT_FALSE(SigningKey::fromPem(Secret("not a key")).ok());
  EXPECT_FALSE(PublicKey::fromPem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n").ok());
}

TEST(Ed25519, LoadsTheKeyFromEnvOrFileButNeverFromTheWorkspace) {
  testing::TempDir ws, keys;
  auto key = SigningKey::generate();
  ASSERT_TRUE(key.ok());
  auto pem = key->privateKeyPem();
  ASSERT_TRUE(pem.ok());
  const std::string text(pem->revealForInjection());

  ::unsetenv(std::string(kSigningKeyEnv).c_str());
  auto none = loadSigningKeyPem("", ws.path());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  ::setenv(std::string(kSigningKeyEnv).c_str(), text.c_str(), 1);
  auto from_env = loadSigningKeyPem("", ws.path());
  ::unsetenv(std::string(kSigningKeyEnv).c_str());
  ASSERT_TRUE(from_env.ok() && from_env->has_value());
  EXPECT_EQ((*from_env)->revealForInjection(), text);

  testing::writeFile(keys.path() + "/k.pem", text);
  auto from_file = loadSigningKeyPem(keys.path() + "/k.pem", ws.path());
  ASSERT_TRUE(from_file.ok()) << from_file.error().message();
  ASSERT_TRUE(from_file->has_value());
  EXPECT_TRUE(SigningKey::fromPem(**from_file).ok());

  testing::writeFile(ws.path() + "/k.pem", text);
  auto inside = loadSigningKeyPem(ws.path() + "/k.pem", ws.path());
  ASSERT_FALSE(inside.ok());
  EXPECT_EQ(inside.error().code(), static_cast<int>(Errc::kRefused));
  ASSERT_EQ(::symlink((ws.path() + "/k.pem").c_str(), (keys.path() + "/link.pem").c_str()), 0);
  EXPECT_FALSE(loadSigningKeyPem(keys.path() + "/link.pem", ws.path()).ok()) << "a link into the workspace";
}

}  // namespace
}  // namespace corral::audit
