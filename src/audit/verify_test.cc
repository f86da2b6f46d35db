// SPDX-License-Identifier: Apache-2.0
// verifyRecord: usage errors versus failed records, and what a report carries.
#include "audit/verify.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "audit/body_outputs.h"
#include "audit/record_dir.h"
#include "audit/result.h"
#include "audit/trace.h"
#include "audit_fixture.h"

namespace corral::audit {
namespace {

using testing::TempDir;
using testing::verifyWorkspace;

TEST(VerifyRecord, BadUsageIsAnErrorNotAReport) {
  TempDir ws;
  EXPECT_FALSE(verifyRecord(ws.path() + "/missing", {}).ok());
  testing::writeFile(ws.path() + "/file", "x");
  EXPECT_FALSE(verifyRecord(ws.path() + "/file", {}).ok());
  VerifyOptions o;
  o.trusted_head = "xyz";
  EXPECT_FALSE(verifyRecord(ws.path(), o).ok());
}

TEST(VerifyRecord, MissingPiecesAreFailures) {
  TempDir ws;
  EXPECT_EQ(verifyWorkspace(ws.path()).failure, "no .corral/ directory in the workspace");
  ASSERT_EQ(::mkdir((ws.path() + "/.corral").c_str(), 0755), 0);
  EXPECT_EQ(verifyWorkspace(ws.path()).failure, "no trace.jsonl in .corral/");
  {
    auto w = TraceWriter::openInWorkspace(ws.path());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->append("run_start", nlohmann::json::object()).ok());
  }
  EXPECT_EQ(verifyWorkspace(ws.path()).failure, "no result.json (the run did not finish?)");
}

TEST(VerifyRecord, EmptyTraceWithItsResultVerifies) {
  TempDir ws;
  auto w = TraceWriter::openInWorkspace(ws.path());
  ASSERT_TRUE(w.ok());
  auto dir = openRecordDir(ws.path(), false);
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(finishRecord(*dir, *w, sha256Hex("m"), nlohmann::json::object(), nullptr).ok());
  VerifyReport r = verifyWorkspace(ws.path());
  EXPECT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.trace_count, 0u);
  EXPECT_EQ(r.trace_head, kZeroHash);
}

TEST(VerifyRecord, ReportCarriesCommitmentsAndSignatureState) {
  TempDir ws;
  SigningKey key = testing::newKey();
  testing::writeSampleRecord(ws.path(), 6, &key);
  VerifyReport r = verifyWorkspace(ws.path());
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.trace_count, 6u);
  EXPECT_EQ(r.manifest_sha256, sha256Hex("{\"task\":\"fix the bug\"}"));
  EXPECT_EQ(r.signature, SignatureStatus::kNotChecked);
  EXPECT_EQ(r.public_key_spki_sha256, key.publicKeySpkiSha256());
}

TEST(VerifyRecord, SymlinkedFilesAreFailures) {
  TempDir ws, other;
  testing::writeSampleRecord(other.path(), 3, nullptr);
  ASSERT_EQ(::mkdir((ws.path() + "/.corral").c_str(), 0755), 0);
  ASSERT_EQ(::symlink(testing::tracePath(other.path()).c_str(), testing::tracePath(ws.path()).c_str()), 0);
  EXPECT_EQ(verifyWorkspace(ws.path()).failure, "trace.jsonl is a symlink");
}

// A record anyone can make (unsigned, body hash recomputed) whose body.outputs is malformed.
// corral verify once aborted (SIGABRT, exit 134) on a non-string "applied", "path" or
// "sha256", and skipped a null or object "outputs" silently (issue #19).
VerifyReport verifyCraftedBody(const nlohmann::json& body, bool check_outputs) {
  TempDir ws;
  testing::writeFile(ws.path() + "/out.txt", "hello\n");
  {
    auto w = TraceWriter::openInWorkspace(ws.path());
    EXPECT_TRUE(w.ok());
    EXPECT_TRUE(w->append("run_start", nlohmann::json::object()).ok());
    auto dir = openRecordDir(ws.path(), false);
    EXPECT_TRUE(dir.ok());
    EXPECT_TRUE(finishRecord(*dir, *w, sha256Hex("m"), body, nullptr).ok());
  }
  VerifyOptions o;
  o.check_outputs = check_outputs;
  auto r = verifyRecord(ws.path(), o);
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : VerifyReport{};
}

TEST(VerifyRecord, MalformedBodyOutputsFailWithOneLineAndNeverAbort) {
  using nlohmann::json;
  const std::string hello = sha256Hex("hello\n");
  auto copied = [&](json patch) {
    json o = {{"applied", "copied"}, {"bytes", 6}, {"path", "out.txt"}, {"sha256", hello}};
    o.update(patch);
    return json::array({o});
  };
  const struct {
    json outputs;
    std::string failure;
  } cases[] = {
      {copied({{"applied", 5}}), "result.json: body.outputs[0].applied is not one of copied, refused, withheld, missing"},
      {copied({{"applied", json::array()}}), "result.json: body.outputs[0].applied is not one of copied, refused, withheld, missing"},
      {copied({{"path", 7}}), "result.json: body.outputs[0].path is not a relative path in normal form"},
      {copied({{"path", nullptr}}), "result.json: body.outputs[0].path is not a relative path in normal form"},
      {copied({{"sha256", json::object()}}), "result.json: body.outputs[0].sha256 is not \"\" or 64 lowercase hex digits"},
      {copied({{"bytes", "6"}}), "result.json: body.outputs[0].bytes is not a non-negative integer"},
      {copied({{"bytes", true}}), "result.json: body.outputs[0].bytes is not a non-negative integer"},
      {copied({{"changed", 1}}), "result.json: body.outputs[0].changed is not true or false"},
      {copied({{"path", "./out.txt"}}), "result.json: body.outputs[0].path is not a relative path in normal form"},
      {copied({{"path", "d/../out.txt"}}), "result.json: body.outputs[0].path is not a relative path in normal form"},
      {copied({{"path", "d//out.txt"}}), "result.json: body.outputs[0].path is not a relative path in normal form"},
      {nullptr, "result.json: body.outputs is not an array"},
      {json::object(), "result.json: body.outputs is not an array"},
      {"out.txt", "result.json: body.outputs is not an array"},
      {json::array({7}), "result.json: body.outputs[0] is not an object"},
  };
  for (const auto& c : cases) {
    for (bool check_outputs : {true, false}) {
      const VerifyReport r = verifyCraftedBody({{"status", "finished"}, {"outputs", c.outputs}}, check_outputs);
      EXPECT_FALSE(r.ok) << c.outputs.dump() << ": a malformed body passed";
      EXPECT_EQ(r.failure, c.failure) << c.outputs.dump() << (check_outputs ? "" : " (--record-only)");
    }
  }
  // Control: the same entry well-formed verifies, and is compared with the workspace.
  const VerifyReport ok = verifyCraftedBody({{"status", "finished"}, {"outputs", copied(json::object())}}, true);
  EXPECT_TRUE(ok.ok) << ok.failure;
  EXPECT_EQ(ok.outputs_checked, 1u);
}

TEST(BodyOutputs, OnePathOneSpelling) {
  for (const char* p : {"out.txt", "d/out.txt", "a/b/c", ".hidden", "caf\xc3\xa9", "..x", "x.."})
    EXPECT_TRUE(isNormalOutputPath(p)) << p;
  for (const char* p : {"", "/x", "./x", "x/.", "a/../x", "..", "a//x", "x/", ".corral", ".corral/x", "a\nb", "a\x7f",
                        "\xff"})
    EXPECT_FALSE(isNormalOutputPath(p)) << p;
  EXPECT_FALSE(isNormalOutputPath(std::string(256, 'a')));
  EXPECT_TRUE(isNormalOutputPath(std::string(255, 'a')));
}

}  // namespace
}  // namespace corral::audit
