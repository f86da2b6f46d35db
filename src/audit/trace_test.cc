// SPDX-License-Identifier: Apache-2.0
// TraceWriter: exact line format, chaining across reopen, locking, sync modes, bad input.
#include "audit/trace.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <gtest/gtest.h>

#include "audit/record_dir.h"
#include "audit_fixture.h"

namespace corral::audit {
namespace {

using testing::TempDir;
using testing::readFile;
using testing::readLines;
using testing::tracePath;

TraceOptions fixedClock(int64_t start = 1000) {
  TraceOptions o;
  o.clock_ms = [t = start]() mutable { return t++; };
  return o;
}

TEST(TraceWriter, WritesTheDocumentedLineFormat) {
  TempDir ws;
  auto w = TraceWriter::openInWorkspace(ws.path(), fixedClock());
  ASSERT_TRUE(w.ok()) << w.error().message();
  EXPECT_EQ(w->count(), 0u);
  EXPECT_EQ(w->head(), kZeroHash);
  ASSERT_TRUE(w->append("run_start", {{"corral", "0.1.0"}}).ok());
  ASSERT_TRUE(w->append("tool_call", {{"tool", "read"}, {"bytes", 12}}).ok());
  const std::string line0 =
      R"({"data":{"corral":"0.1.0"},"prev":"0000000000000000000000000000000000000000000000000000000000000000","seq":0,"ts_ms":1000,"type":"run_start","v":1})";
  const std::string line1 = R"({"data":{"bytes":12,"tool":"read"},"prev":")" + sha256Hex(line0) +
                            R"(","seq":1,"ts_ms":1001,"type":"tool_call","v":1})";
  EXPECT_EQ(readFile(tracePath(ws.path())), line0 + "\n" + line1 + "\n");
  EXPECT_EQ(w->count(), 2u);
  EXPECT_EQ(w->head(), sha256Hex(line1));
}

TEST(TraceWriter, ReopenVerifiesAndContinuesTheChain) {
  TempDir ws;
  std::string head;
  {
    auto w = TraceWriter::openInWorkspace(ws.path(), fixedClock());
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(w->append("step", {{"i", i}}).ok());
    head = w->head();
  }
  auto w = TraceWriter::openInWorkspace(ws.path(), fixedClock());
  ASSERT_TRUE(w.ok()) << w.error().message();
  EXPECT_EQ(w->count(), 3u);
  EXPECT_EQ(w->head(), head);
  ASSERT_TRUE(w->append("step", {{"i", 3}}).ok());
  auto lines = readLines(tracePath(ws.path()));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[3].find("\"prev\":\"" + head + "\""), std::string::npos);
  EXPECT_NE(lines[3].find("\"seq\":3"), std::string::npos);
}

TEST(TraceWriter, SecondWriterIsRefusedWhileTheFirstIsOpen) {
  TempDir ws;
  auto first = TraceWriter::openInWorkspace(ws.path());
  ASSERT_TRUE(first.ok());
  auto second = TraceWriter::openInWorkspace(ws.path());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code(), static_cast<int>(Errc::kRefused));
  EXPECT_EQ(second.error().message(), "trace.jsonl is held by another writer");
}

TEST(TraceWriter, BatchModeAppendsAndSyncs) {
  TempDir ws;
  TraceOptions o = fixedClock();
  o.sync = TraceSync::kBatch;
  auto w = TraceWriter::openInWorkspace(ws.path(), o);
  ASSERT_TRUE(w.ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(w->append("step", {{"i", i}}).ok());
  ASSERT_TRUE(w->sync().ok());
  EXPECT_EQ(readLines(tracePath(ws.path())).size(), 10u);
}

TEST(TraceWriter, RefusesBadTypesAndDataWithoutWriting) {
  TempDir ws;
  auto w = TraceWriter::openInWorkspace(ws.path(), fixedClock());
  ASSERT_TRUE(w.ok());
  for (const char* type : {"", "Run", "1x", "tool-call", "a b", "x\n", "abcdefghijklmnopqrstuvwxyz0123456"})
    EXPECT_FALSE(w->append(type, nlohmann::json::object()).ok()) << type;
  EXPECT_FALSE(w->append("step", nlohmann::json::array()).ok()) << "data must be an object";
  EXPECT_FALSE(w->append("step", {{"ratio", 0.5}}).ok()) << "floats are not canonical";
  EXPECT_FALSE(w->append("step", {{"bad", "\xff"}}).ok()) << "invalid UTF-8";
  EXPECT_EQ(w->count(), 0u);
  EXPECT_EQ(readFile(tracePath(ws.path())), "");
}

TEST(TraceWriter, RefusesAnEntryOverTheLineLimit) {
  TempDir ws;
  auto w = TraceWriter::openInWorkspace(ws.path(), fixedClock());
  ASSERT_TRUE(w.ok());
  nlohmann::json data;
  for (int i = 0; i < 20; ++i) data["k" + std::to_string(i)] = std::string(4000, 'x');  // each string is allowed
  auto r = w->append("step", data);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kLimit));
  EXPECT_EQ(w->count(), 0u);
}

TEST(TraceWriter, RefusesSymlinkedTraceAndRecordDir) {
  TempDir ws, elsewhere;
  ASSERT_EQ(::symlink(elsewhere.path().c_str(), (ws.path() + "/.corral").c_str()), 0);
  auto r = TraceWriter::openInWorkspace(ws.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kRefused));

  TempDir ws2;
  ASSERT_EQ(::mkdir((ws2.path() + "/.corral").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((elsewhere.path() + "/t").c_str(), tracePath(ws2.path()).c_str()), 0);
  auto r2 = TraceWriter::openInWorkspace(ws2.path());
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().code(), static_cast<int>(Errc::kRefused));
  EXPECT_NE(::access((elsewhere.path() + "/t").c_str(), F_OK), 0) << "the symlink target was created";
}

TEST(TraceWriter, RefusesATraceWithOtherHardLinks) {
  TempDir ws;
  ASSERT_EQ(::mkdir((ws.path() + "/.corral").c_str(), 0755), 0);
  const std::string other = ws.path() + "/input.txt";
  { std::FILE* f = std::fopen(other.c_str(), "w"); ASSERT_NE(f, nullptr); std::fclose(f); }
  ASSERT_EQ(::link(other.c_str(), tracePath(ws.path()).c_str()), 0);
  auto r = TraceWriter::openInWorkspace(ws.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kRefused));
  EXPECT_EQ(readFile(other), "") << "the trace was written into a hard-linked file";
  // Control: once the extra link is gone the same file is a trace again.
  ASSERT_EQ(::unlink(other.c_str()), 0);
  EXPECT_TRUE(TraceWriter::openInWorkspace(ws.path()).ok());
}

TEST(TraceWriter, RefusesATornLastLine) {
  TempDir ws;
  {
    auto w = TraceWriter::openInWorkspace(ws.path(), fixedClock());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->append("step", {{"i", 0}}).ok());
  }
  testing::writeFile(tracePath(ws.path()), readFile(tracePath(ws.path())) + "{\"data\":{");
  auto w = TraceWriter::openInWorkspace(ws.path());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().message(),
            "refusing to append to a broken trace: trace line 2: no newline at the end (truncated mid-line?)");
}

}  // namespace
}  // namespace corral::audit
