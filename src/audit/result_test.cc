// SPDX-License-Identifier: Apache-2.0
// result.json: exact encoding, strict parsing, atomic replacement.
#include "audit/result.h"

#include <dirent.h>

#include <gtest/gtest.h>

#include "audit/base64.h"
#include "audit/record_dir.h"
#include "audit_fixture.h"

namespace corral::audit {
namespace {

const std::string kM = sha256Hex("manifest");  // NOLINT(cert-err58-cpp): test data
const std::string kH = sha256Hex("head");      // NOLINT(cert-err58-cpp): test data

TEST(ResultJson, UnsignedEncodingIsTheDocumentedForm) {
  auto r = encodeResult(kM, kH, 3, {{"status", "finished"}}, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const std::string body_hash = sha256Hex(R"({"status":"finished"})");
  EXPECT_EQ(*r, R"({"body":{"status":"finished"},"commitments":{"manifest_sha256":")" + kM +
                    R"(","result_body_sha256":")" + body_hash + R"(","trace_count":3,"trace_head":")" + kH +
                    R"("},"v":1})" + "\n");
}

TEST(ResultJson, SignedRoundTripAndSignedMessage) {
  auto key = SigningKey::generate();
  ASSERT_TRUE(key.ok());
  auto bytes = encodeResult(kM, kH, 9, {{"a", 1}}, &*key);
  ASSERT_TRUE(bytes.ok());
  auto rec = parseResult(*bytes);
  ASSERT_TRUE(rec.ok()) << rec.error().message();
  ASSERT_TRUE(rec->signature.has_value());
  EXPECT_EQ(rec->signature->public_key_spki_sha256, key->publicKeySpkiSha256());
  EXPECT_EQ(rec->commitments.trace_count, 9u);
  auto msg = signedMessage(rec->commitments);
  ASSERT_TRUE(msg.ok());
  EXPECT_EQ(*msg, R"({"manifest_sha256":")" + kM + R"(","result_body_sha256":")" + sha256Hex(R"({"a":1})") +
                      R"(","trace_count":9,"trace_head":")" + kH + R"("})");
  auto pub = testing::publicKeyOf(*key);
  EXPECT_TRUE(pub.verify(*msg, rec->signature->sig));
}

TEST(ResultJson, EncodeRefusesBadCommitmentInputs) {
  EXPECT_FALSE(encodeResult("abc", kH, 0, nlohmann::json::object(), nullptr).ok());
  EXPECT_FALSE(encodeResult(kM, std::string(64, 'A'), 0, nlohmann::json::object(), nullptr).ok());
  EXPECT_FALSE(encodeResult(kM, kH, 0, nlohmann::json::array(), nullptr).ok());
  EXPECT_FALSE(encodeResult(kM, kH, 0, {{"f", 1.5}}, nullptr).ok());
}

TEST(ResultJson, ParseIsStrict) {
  auto good = encodeResult(kM, kH, 1, {{"x", 1}}, nullptr);
  ASSERT_TRUE(good.ok());
  std::string g = *good;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = g;
    size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  const std::string sig_ok = R"("signature":{"alg":"ed25519","public_key_spki_sha256":")" + kH + R"(","sig":")" +
                             base64Encode(std::string(64, 'x')) + R"("},)";
  const std::pair<std::string, std::string> cases[] = {
      {g.substr(0, g.size() - 1), "result.json: does not end in a newline (truncated?)"},
      {with(R"("v":1)", R"("v":2)"), "result.json: \"v\" is not 1"},
      {with(R"("v":1)", R"("extra":0,"v":1)"), "result.json: the top level has an unknown field"},
      {with(R"("trace_count":1)", R"("trace_count":-1)"), "result.json: commitments.trace_count is not a non-negative integer"},
      {with(kM, std::string(63, 'a')), "result.json: commitments.manifest_sha256 is not 64 lowercase hex digits"},
      {with(R"("body":{"x":1})", R"("body":[])"), "result.json: body is not an object"},
      {with(R"("v":1)", R"("signature":{"alg":"rsa","public_key_spki_sha256":")" + kH + R"(","sig":""},"v":1)"),
       "result.json: signature.alg is not \"ed25519\""},
      {with(R"("v":1)", sig_ok.substr(0, sig_ok.size() - 1).replace(sig_ok.find("\"sig\":\"") + 7, 4, "") + R"(,"v":1)"),
       "result.json: signature.sig is not the base64 of a 64-byte Ed25519 signature"},
      {with(R"({"body")", R"({ "body")"), "result.json: not in canonical form (first difference at byte 1)"},
  };
  for (const auto& [text, want] : cases) {
    auto r = parseResult(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().message(), want) << text;
  }
  EXPECT_TRUE(parseResult(with(R"("v":1)", sig_ok + R"("v":1)")).ok());
}

TEST(ResultJson, WriteReplacesAtomicallyAndLeavesNoTempFile) {
  testing::TempDir ws;
  auto dir = openRecordDir(ws.path(), true);
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(writeResultFile(*dir, "first\n").ok());
  ASSERT_TRUE(writeResultFile(*dir, "second\n").ok());
  EXPECT_EQ(testing::readFile(testing::resultPath(ws.path())), "second\n");
  int entries = 0;
  DIR* d = ::opendir((ws.path() + "/.corral").c_str());
  ASSERT_NE(d, nullptr);
  while (struct dirent* e = ::readdir(d)) entries += std::string(e->d_name)[0] == '.' ? 0 : 1;
  ::closedir(d);
  EXPECT_EQ(entries, 1) << "a temp file was left behind";
}

}  // namespace
}  // namespace corral::audit
