// SPDX-License-Identifier: Apache-2.0
// `corral keygen`'s key files: private key 0600 PKCS#8, public SPKI, never overwritten.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "audit/key_files.h"
#include "audit/signing.h"
#include "audit_fixture.h"

namespace corral::audit {
namespace {

using namespace corral::audit::testing;

mode_t modeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

class AuditKeygen : public ::testing::Test {
 protected:
  std::string priv() const { return dir_.path() + "/" + std::string(kPrivateKeyFileName); }
  std::string pub() const { return dir_.path() + "/" + std::string(kPublicKeyFileName); }
  TempDir dir_;
};

TEST_F(AuditKeygen, PrivateKeyIsMode0600EvenWithAPermissiveUmask) {
  mode_t old = ::umask(0);
  auto r = writeKeyPair(dir_.path());
  ::umask(old);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(modeOf(priv()), 0600u);
  EXPECT_EQ(modeOf(pub()), 0644u);
  EXPECT_EQ(r->private_path, priv());
  EXPECT_EQ(r->public_path, pub());
}

TEST_F(AuditKeygen, FilesArePkcs8AndSpkiOfOnePair) {
  auto r = writeKeyPair(dir_.path());
  ASSERT_TRUE(r.ok()) << r.error().message();
  const std::string priv_pem = readFile(priv()), pub_pem = readFile(pub());
  EXPECT_EQ(priv_pem.rfind("-----BEGIN PRIVATE KEY-----\n", 0), 0u);
  EXPECT_EQ(pub_pem.rfind("-----BEGIN PUBLIC KEY-----\n", 0), 0u);
  auto key = SigningKey::fromPem(Secret(priv_pem));
  auto pk = PublicKey::fromPem(pub_pem);
  ASSERT_TRUE(key.ok() && pk.ok());
  EXPECT_EQ(key->publicKeySpkiSha256(), pk->spkiSha256());
  EXPECT_EQ(r->spki_sha256, pk->spkiSha256());
  auto sig = key->sign("m");
  ASSERT_TRUE(sig.ok());
  EXPECT_TRUE(pk->verify("m", *sig));
}

TEST_F(AuditKeygen, RefusesToOverwriteAPrivateKey) {
  writeFile(priv(), "existing key");
  auto r = writeKeyPair(dir_.path());
  ASSERT_FALSE(r.ok()) << "keygen overwrote an existing private key";
  EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kRefused));
  EXPECT_EQ(r.error().message(), "audit-ed25519-private.pem already exists; refusing to overwrite a key");
  EXPECT_EQ(readFile(priv()), "existing key");
  EXPECT_NE(::access(pub().c_str(), F_OK), 0) << "a half pair was left";
}

TEST_F(AuditKeygen, RefusesToOverwriteAPublicKeyAndLeavesNoHalfPair) {
  writeFile(pub(), "existing public key");
  auto r = writeKeyPair(dir_.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kRefused));
  EXPECT_EQ(readFile(pub()), "existing public key");
  EXPECT_NE(::access(priv().c_str(), F_OK), 0) << "a private key was left without its public half";
}

TEST_F(AuditKeygen, SecondRunRefusesAndKeepsTheFirstPair) {
  auto first = writeKeyPair(dir_.path());
  ASSERT_TRUE(first.ok());
  const std::string before = readFile(priv());
  EXPECT_FALSE(writeKeyPair(dir_.path()).ok());
  EXPECT_EQ(readFile(priv()), before);
}

TEST_F(AuditKeygen, RefusesASymlinkPlantedAtTheKeyPath) {
  TempDir elsewhere;
  const std::string target = elsewhere.path() + "/stolen.pem";
  ASSERT_EQ(::symlink(target.c_str(), priv().c_str()), 0);
  auto r = writeKeyPair(dir_.path());
  ASSERT_FALSE(r.ok()) << "keygen wrote through a symlink";
  EXPECT_NE(::access(target.c_str(), F_OK), 0) << "the key was written to the symlink's target";
}

TEST_F(AuditKeygen, CreatesAMissingDirectoryMode0700) {
  const std::string sub = dir_.path() + "/keys";
  auto r = writeKeyPair(sub);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(modeOf(sub) & 0077, 0u);
}

}  // namespace
}  // namespace corral::audit
