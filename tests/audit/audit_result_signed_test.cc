// SPDX-License-Identifier: Apache-2.0
// audit.result-signed: result.json's commitments are signed with Ed25519, and a swapped body,
// a wrong key, a stripped signature or any flipped bit is caught by `verify --public-key`.
#include <gtest/gtest.h>

#include "audit/base64.h"
#include "audit/canonical_json.h"
#include "audit/result.h"
#include "base/sha256.h"
#include "audit_fixture.h"

namespace corral::audit {
namespace {

using namespace corral::audit::testing;

class AuditResultSigned : public ::testing::Test {
 protected:
  void SetUp() override {
    writeSampleRecord(ws_.path(), 5, &key_);
    original_ = readFile(resultPath(ws_.path()));
    VerifyReport r = verifyWorkspace(ws_.path(), &pub_);
    ASSERT_TRUE(r.ok) << "control: the signed record must verify with its key: " << r.failure;
    ASSERT_EQ(r.signature, SignatureStatus::kValid);
  }
  nlohmann::json resultDoc() { return nlohmann::json::parse(original_); }
  // Writes doc canonically as result.json and returns verify's failure with `key`.
  std::string failureWith(const nlohmann::json& doc, const PublicKey* key) {
    auto bytes = canonicalJson(doc);
    EXPECT_TRUE(bytes.ok());
    writeFile(resultPath(ws_.path()), *bytes + "\n");
    VerifyReport r = verifyWorkspace(ws_.path(), key);
    EXPECT_FALSE(r.ok) << "audit.result-signed broken: a tampered result.json verified";
    return r.failure;
  }

  TempDir ws_;
  SigningKey key_ = newKey();
  PublicKey pub_ = publicKeyOf(key_);
  std::string original_;
};

TEST_F(AuditResultSigned, ControlSignedRecordVerifiesWithItsKey) {
  VerifyReport r = verifyWorkspace(ws_.path(), &pub_);
  EXPECT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.signature, SignatureStatus::kValid);
  EXPECT_EQ(r.public_key_spki_sha256, key_.publicKeySpkiSha256());
}

TEST_F(AuditResultSigned, SwappedResultBody) {
  nlohmann::json doc = resultDoc();
  doc["body"]["status"] = "failed";
  EXPECT_EQ(failureWith(doc, &pub_),
            "result.json: body does not match commitments.result_body_sha256 (the body was changed or swapped)");
  EXPECT_EQ(failureWith(doc, nullptr),
            "result.json: body does not match commitments.result_body_sha256 (the body was changed or swapped)")
      << "the body hash is checked without a key too";
}

TEST_F(AuditResultSigned, SwappedResultBodyWithRecomputedHash) {
  nlohmann::json doc = resultDoc();
  doc["body"] = {{"status", "failed"}};
  doc["commitments"]["result_body_sha256"] = sha256Hex(*canonicalJson(doc["body"]));
  EXPECT_EQ(failureWith(doc, &pub_),
            "result.json: the signature does not verify over the commitments with the given public key");
}

TEST_F(AuditResultSigned, EditedManifestHash) {
  nlohmann::json doc = resultDoc();
  doc["commitments"]["manifest_sha256"] = sha256Hex("another manifest");
  EXPECT_EQ(failureWith(doc, &pub_),
            "result.json: the signature does not verify over the commitments with the given public key");
}

TEST_F(AuditResultSigned, WrongKey) {
  SigningKey other = newKey();
  PublicKey other_pub = publicKeyOf(other);
  VerifyReport r = verifyWorkspace(ws_.path(), &other_pub);
  EXPECT_FALSE(r.ok) << "audit.result-signed broken: verified with a key that did not sign";
  EXPECT_EQ(r.failure, "result.json is signed by key " + key_.publicKeySpkiSha256() + ", not by the given public key " +
                           other_pub.spkiSha256());
}

TEST_F(AuditResultSigned, WrongKeyWithForgedFingerprint) {
  SigningKey other = newKey();
  PublicKey other_pub = publicKeyOf(other);
  nlohmann::json doc = resultDoc();
  doc["signature"]["public_key_spki_sha256"] = other_pub.spkiSha256();  // the fingerprint is not signed
  EXPECT_EQ(failureWith(doc, &other_pub),
            "result.json: the signature does not verify over the commitments with the given public key");
}

TEST_F(AuditResultSigned, ResignedByAForgerKey) {
  // Truncate, recommit and sign with the forger's own key: consistent, but not ours.
  auto lines = readLines(tracePath(ws_.path()));
  lines.pop_back();
  writeLines(tracePath(ws_.path()), lines);
  SigningKey forger = newKey();
  recommit(ws_.path(), &forger);
  VerifyReport r = verifyWorkspace(ws_.path(), &pub_);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.failure, "result.json is signed by key " + forger.publicKeySpkiSha256() + ", not by the given public key " +
                           pub_.spkiSha256());
}

TEST_F(AuditResultSigned, MissingSignature) {
  nlohmann::json doc = resultDoc();
  doc.erase("signature");
  EXPECT_EQ(failureWith(doc, &pub_), "result.json is not signed, but --public-key requires a signature");
  VerifyReport r = verifyWorkspace(ws_.path());
  EXPECT_TRUE(r.ok) << "without --public-key an unsigned record is acceptable: " << r.failure;
  EXPECT_EQ(r.signature, SignatureStatus::kAbsent);
}

TEST_F(AuditResultSigned, SignatureIsOverTheCanonicalCommitmentsAlone) {
  nlohmann::json doc = resultDoc();
  const nlohmann::json& c = doc["commitments"];
  // Spelled out by hand, as docs/audit-format.md states it: keys in this order, no spaces.
  const std::string message = "{\"manifest_sha256\":\"" + c["manifest_sha256"].get<std::string>() +
                              "\",\"result_body_sha256\":\"" + c["result_body_sha256"].get<std::string>() +
                              "\",\"trace_count\":" + std::to_string(c["trace_count"].get<int>()) +
                              ",\"trace_head\":\"" + c["trace_head"].get<std::string>() + "\"}";
  auto sig = base64DecodeStrict(doc["signature"]["sig"].get<std::string>());
  ASSERT_TRUE(sig.has_value());
  EXPECT_TRUE(pub_.verify(message, *sig));
  EXPECT_FALSE(pub_.verify(message + " ", *sig)) << "control: other bytes do not verify";
}

TEST_F(AuditResultSigned, UnsignedRecordStillCommits) {
  TempDir ws;
  writeSampleRecord(ws.path(), 4, nullptr);
  VerifyReport r = verifyWorkspace(ws.path());
  EXPECT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.signature, SignatureStatus::kAbsent);
  EXPECT_EQ(readFile(resultPath(ws.path())).find("signature"), std::string::npos);
}

// PROPERTY: flipping any single bit of result.json is detected by verify --public-key.
TEST_F(AuditResultSigned, EveryBitFlipInTheResultIsDetected) {
  const std::string path = resultPath(ws_.path());
  size_t accepted = 0;
  for (size_t i = 0; i < original_.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      xorByte(path, i, static_cast<unsigned char>(1 << bit));
      VerifyReport r = verifyWorkspace(ws_.path(), &pub_);
      xorByte(path, i, static_cast<unsigned char>(1 << bit));
      if (r.ok) {
        ++accepted;
        ADD_FAILURE() << "audit.result-signed broken: bit " << bit << " of byte " << i << " flipped, verified";
      }
    }
  }
  EXPECT_EQ(accepted, 0u) << "of " << original_.size() * 8 << " single-bit mutations";
  EXPECT_TRUE(verifyWorkspace(ws_.path(), &pub_).ok) << "control: the restored result verifies again";
}

}  // namespace
}  // namespace corral::audit
