// SPDX-License-Identifier: Apache-2.0
// verify-release against a signed release directory and each way one can be damaged.
#include "cli/verify_release.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "audit/sha256.h"
#include "audit_fixture.h"

namespace corral::cli {
namespace {

using audit::testing::readFile;
using audit::testing::writeFile;

// A release directory as scripts/release.sh lays it out: two artifacts, SHA256SUMS in
// sha256sum's format, and SHA256SUMS.sig over it.
class ReleaseDir : public ::testing::Test {
 protected:
  void SetUp() override {
    writeFile(path("corral_0.1.0_amd64.deb"), "deb bytes");
    writeFile(path("corral-0.1.0.spdx.json"), "{}\n");
    sums_ = line("corral-0.1.0.spdx.json") + line("corral_0.1.0_amd64.deb");
    sign(sums_);
  }
  std::string path(const std::string& name) const { return dir_.path() + "/" + name; }
  std::string line(const std::string& name) const {
    return audit::sha256Hex(readFile(path(name))) + "  " + name + "\n";
  }
  void sign(const std::string& sums) {
    writeFile(path("SHA256SUMS"), sums);
    auto sig = key_.sign(sums);
    ASSERT_TRUE(sig.ok());
    writeFile(path("SHA256SUMS.sig"), *sig);
  }
  Result<ReleaseVerified> verify() const { return verifyReleaseDir(dir_.path(), pub_); }
  // The check must fail, and its one line must name what failed.
  void expectFailure(const std::string& names) const {
    auto r = verify();
    ASSERT_FALSE(r.ok()) << "a damaged release verified";
    EXPECT_NE(r.error().message().find(names), std::string::npos) << r.error().message();
    EXPECT_EQ(r.error().message().find('\n'), std::string::npos) << r.error().message();
  }

  audit::testing::TempDir dir_;
  audit::SigningKey key_ = audit::testing::newKey();
  audit::PublicKey pub_ = audit::testing::publicKeyOf(key_);
  std::string sums_;
};

TEST_F(ReleaseDir, ControlSignedReleaseVerifies) {
  auto r = verify();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->files, 2u);
  EXPECT_EQ(r->key_spki_sha256, pub_.spkiSha256());
}

TEST_F(ReleaseDir, TamperedArtifactFails) {
  audit::testing::xorByte(path("corral_0.1.0_amd64.deb"), 3, 0x01);
  expectFailure("corral_0.1.0_amd64.deb does not match SHA256SUMS");
}

TEST_F(ReleaseDir, MissingArtifactFails) {
  ASSERT_EQ(::unlink(path("corral-0.1.0.spdx.json").c_str()), 0);
  expectFailure("corral-0.1.0.spdx.json is missing");
}

TEST_F(ReleaseDir, SymlinkedArtifactFails) {
  ASSERT_EQ(::rename(path("corral-0.1.0.spdx.json").c_str(), path("elsewhere").c_str()), 0);
  ASSERT_EQ(::symlink("elsewhere", path("corral-0.1.0.spdx.json").c_str()), 0);
  expectFailure("corral-0.1.0.spdx.json is not a regular file");
}

TEST_F(ReleaseDir, EditedSumsFailsTheSignature) {
  std::string sums = sums_;
  sums[0] = sums[0] == 'a' ? 'b' : 'a';
  writeFile(path("SHA256SUMS"), sums);
  expectFailure("SHA256SUMS.sig does not verify");
}

TEST_F(ReleaseDir, WrongKeyFails) {
  pub_ = audit::testing::publicKeyOf(audit::testing::newKey());
  expectFailure("SHA256SUMS.sig does not verify");
}

TEST_F(ReleaseDir, MissingSignatureFails) {
  ASSERT_EQ(::unlink(path("SHA256SUMS.sig").c_str()), 0);
  expectFailure("SHA256SUMS.sig");
}

TEST_F(ReleaseDir, TruncatedSignatureFails) {
  writeFile(path("SHA256SUMS.sig"), readFile(path("SHA256SUMS.sig")).substr(0, 63));
  expectFailure("not a 64-byte Ed25519 signature");
}

TEST_F(ReleaseDir, MissingSumsFails) {
  ASSERT_EQ(::unlink(path("SHA256SUMS").c_str()), 0);
  expectFailure("SHA256SUMS");
}

// A signed but malformed SHA256SUMS (a release tool's bug) is refused, not half-read.
TEST_F(ReleaseDir, SignedMalformedSumsFails) {
  sign(sums_ + "not a checksum line\n");
  expectFailure("SHA256SUMS is malformed: line 3");
}

TEST(ParseSha256Sums, AcceptsTextAndBinaryModes) {
  const std::string h(64, 'a');
  auto r = parseSha256Sums(h + "  a.deb\n" + h + " *b.tar.gz\n");
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[1].name, "b.tar.gz");
}

TEST(ParseSha256Sums, RejectsEachMalformation) {
  const std::string h(64, 'a');
  const std::pair<std::string, std::string> cases[] = {
      {"", "empty"},
      {h + "  a.deb", "no newline"},
      {h.substr(1) + "  a.deb\n", "line 1 is not"},
      {std::string(64, 'A') + "  a.deb\n", "line 1 is not"},  // sha256sum writes lowercase
      {h + " a.deb\n", "line 1 is not"},
      {h + "  ../etc/passwd\n", "not a plain file name"},
      {h + "  sub/a.deb\n", "not a plain file name"},
      {h + "  ..\n", "not a plain file name"},
      {h + "  a\rb\n", "not a plain file name"},
      {h + "  a.deb\n" + h + "  a.deb\n", "a second time"},
      {h + "  SHA256SUMS\n", "itself"},
      {h + "  a.deb\r\n", "not a plain file name"},
  };
  for (const auto& [text, why] : cases) {
    auto r = parseSha256Sums(text);
    ASSERT_FALSE(r.ok()) << "accepted: " << text;
    EXPECT_NE(r.error().message().find(why), std::string::npos) << r.error().message();
  }
}

}  // namespace
}  // namespace corral::cli
