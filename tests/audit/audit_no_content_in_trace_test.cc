// SPDX-License-Identifier: Apache-2.0
// audit.no-content-in-trace: file contents and secrets cannot reach trace.jsonl or
// result.json; the trace holds their hashes and sizes instead.
#include <gtest/gtest.h>

#include <type_traits>

#include "audit/canonical_json.h"
#include "audit/result.h"
#include "base/sha256.h"
#include "audit/trace.h"
#include "audit/trace_chain.h"
#include "audit_fixture.h"
#include "base/secret.h"

namespace corral::audit {
namespace {

using namespace corral::audit::testing;

constexpr char kSentinel[] = "corral-sentinel-7f3a";

// A file's contents: the sentinel repeated past the string limit.
std::string sentinelFile() {
  std::string s;
  while (s.size() <= kMaxTraceStringBytes) s += std::string(kSentinel) + "\n";
  return s;
}

class AuditNoContentInTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    auto w = TraceWriter::openInWorkspace(ws_.path());
    ASSERT_TRUE(w.ok()) << w.error().message();
    writer_.emplace(std::move(*w));
    ASSERT_TRUE(writer_->append("run_start", nlohmann::json::object()).ok());
  }
  // Appending data must be refused without writing, and without echoing the sentinel.
  void expectRefused(const nlohmann::json& data) {
    const uint64_t count = writer_->count();
    auto r = writer_->append("tool_call", data);
    ASSERT_FALSE(r.ok()) << "audit.no-content-in-trace broken: content was appended";
    EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kRefused));
    EXPECT_EQ(r.error().message().find(kSentinel), std::string::npos) << "the refusal echoes the content";
    EXPECT_EQ(writer_->count(), count);
    EXPECT_EQ(readFile(tracePath(ws_.path())).find(kSentinel), std::string::npos)
        << "audit.no-content-in-trace broken: the sentinel reached trace.jsonl";
  }

  TempDir ws_;
  std::optional<TraceWriter> writer_;
};

TEST_F(AuditNoContentInTrace, FileContentAsDataIsRefused) {
  expectRefused({{"tool", "read"}, {"content", sentinelFile()}});
}

TEST_F(AuditNoContentInTrace, ContentNestedInArraysAndObjectsIsRefused) {
  expectRefused({{"tool", "write"}, {"args", {{"path", "a.txt"}, {"chunks", {"x", sentinelFile()}}}}});
}

TEST_F(AuditNoContentInTrace, ContentAsAKeyIsRefused) {
  expectRefused({{sentinelFile(), 1}});
}

TEST_F(AuditNoContentInTrace, RefusalNamesThePathAndSizeOnly) {
  auto r = writer_->append("tool_call", {{"args", {"ok", sentinelFile()}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "data.args[1] is " + std::to_string(sentinelFile().size()) +
                                     " bytes (limit 4096): trace ids, sizes and hashes, not contents");
}

TEST_F(AuditNoContentInTrace, ControlHashAndSizeOfTheContentAreTraced) {
  const std::string content = sentinelFile();
  auto r = writer_->append("tool_call", {{"tool", "read"}, {"sha256", sha256Hex(content)}, {"bytes", content.size()}});
  ASSERT_TRUE(r.ok()) << r.error().message();
  const std::string trace = readFile(tracePath(ws_.path()));
  EXPECT_NE(trace.find(sha256Hex(content)), std::string::npos);
  EXPECT_EQ(trace.find(kSentinel), std::string::npos);
}

TEST_F(AuditNoContentInTrace, ControlStringAtTheLimitIsAcceptedOneMoreIsNot) {
  EXPECT_TRUE(writer_->append("step", {{"s", std::string(kMaxTraceStringBytes, 'a')}}).ok());
  EXPECT_FALSE(writer_->append("step", {{"s", std::string(kMaxTraceStringBytes + 1, 'a')}}).ok());
}

TEST_F(AuditNoContentInTrace, WriterStaysUsableAfterARefusal) {
  expectRefused({{"content", sentinelFile()}});
  EXPECT_TRUE(writer_->append("step", {{"i", 1}}).ok());
  EXPECT_EQ(writer_->count(), 2u);
}

TEST_F(AuditNoContentInTrace, SecretCannotBePassedAsData) {
  // Secret has no conversion to JSON: tracing one does not compile.
  static_assert(!std::is_constructible_v<nlohmann::json, const Secret&>);
  static_assert(!std::is_convertible_v<const Secret&, nlohmann::json>);
  static_assert(!std::is_convertible_v<const Secret&, std::string>);
  SUCCEED();
}

TEST_F(AuditNoContentInTrace, VerifierRejectsAForgedTraceCarryingContent) {
  // A trace written by something other than TraceWriter, chained correctly, with contents.
  writer_.reset();
  auto lines = readLines(tracePath(ws_.path()));
  ChainState s{1, sha256Hex(lines[0])};
  nlohmann::json entry = {{"v", 1}, {"seq", 1}, {"prev", s.head}, {"ts_ms", 1}, {"type", "tool_call"},
                          {"data", {{"content", sentinelFile()}}}};
  lines.push_back(*canonicalJson(entry));
  writeLines(tracePath(ws_.path()), lines);
  auto result = encodeResult(sha256Hex("m"), sha256Hex(lines.back()), lines.size(), nlohmann::json::object(), nullptr);
  ASSERT_TRUE(result.ok());
  writeFile(resultPath(ws_.path()), *result);
  VerifyReport r = verifyWorkspace(ws_.path());
  EXPECT_FALSE(r.ok) << "audit.no-content-in-trace broken: verify accepted a trace with content";
  EXPECT_EQ(r.failure.rfind("trace line 2: data.content is ", 0), 0u) << r.failure;
  EXPECT_EQ(r.failure.find(kSentinel), std::string::npos) << "verify echoes the content";
}

TEST_F(AuditNoContentInTrace, SigningKeyNeverReachesTheRecord) {
  writer_.reset();
  TempDir ws;
  SigningKey key = newKey();
  writeSampleRecord(ws.path(), 4, &key);
  auto pem = key.privateKeyPem();
  ASSERT_TRUE(pem.ok());
  std::string_view text = pem->revealForInjection();
  // The base64 body of the PEM, without armour: the key material itself.
  std::string body(text.substr(text.find('\n') + 1, 40));
  for (const std::string& file : {tracePath(ws.path()), resultPath(ws.path())})
    EXPECT_EQ(readFile(file).find(body), std::string::npos) << "audit.no-content-in-trace broken: key in " << file;
}

}  // namespace
}  // namespace corral::audit
