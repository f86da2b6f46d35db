// SPDX-License-Identifier: Apache-2.0
// verifyRecord: usage errors versus failed records, and what a report carries.
#include "audit/verify.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace corral::audit
