// SPDX-License-Identifier: Apache-2.0
// AuditLog::Batch: lines written inside a batch are in the file at once (a kill -9 there
// loses none), and the chain across batches and plain appends verifies. AuditLog::Reservation
// and replay(): a line whose durability is a store's outbox comes back after the file lost it.
#include "daemon/audit_log.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace corral::daemon {
namespace {

class AuditLogBatch : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/corral-audit-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  size_t lines() const {
    std::ifstream in(dir_ + "/audit.jsonl");
    size_t n = 0;
    for (std::string l; std::getline(in, l);) ++n;
    return n;
  }
  std::string dir_;
};

TEST_F(AuditLogBatch, LinesAreWrittenAtOnceAndTheChainHolds) {
  auto log = AuditLog::open(dir_);
  ASSERT_TRUE(log) << log.error().message();
  log->appendSelf("before");
  {
    AuditLog::Batch outer(*log);
    log->appendSelf("in_batch", {{"n", 1}});
    EXPECT_EQ(lines(), 2u) << "a batched line must reach the file before the batch ends";
    {
      AuditLog::Batch inner(*log);
      log->appendSelf("nested", {{"n", 2}});
    }
    log->appendSelf("in_batch", {{"n", 3}});
    EXPECT_EQ(lines(), 4u);
  }
  log->appendSelf("after");
  auto checked = verifyAuditLog(dir_ + "/audit.jsonl");
  ASSERT_TRUE(checked) << checked.error().message();
  EXPECT_EQ(*checked, 5);

  // Control: the checker does see a broken chain in the same file.
  {
    std::ofstream out(dir_ + "/audit.jsonl", std::ios::app);
    out << "{\"seq\":9}\n";
  }
  EXPECT_FALSE(verifyAuditLog(dir_ + "/audit.jsonl"));
}

// The file cut back to `bytes`, as a power cut leaves a log whose last lines were not synced.
void cutTo(const std::string& path, std::uintmax_t bytes) { std::filesystem::resize_file(path, bytes); }

std::vector<Json> events(const std::string& path) {
  std::ifstream in(path);
  std::vector<Json> out;
  for (std::string l; std::getline(in, l);) out.push_back(*parseJson(l));
  return out;
}

TEST_F(AuditLogBatch, AReservedLineLostWithTheFilesTailIsPutBackAsItWas) {
  const std::string path = dir_ + "/audit.jsonl";
  std::vector<std::pair<int64_t, std::string>> outbox;
  std::uintmax_t before = 0;
  {
    auto log = AuditLog::open(dir_);
    ASSERT_TRUE(log) << log.error().message();
    log->appendSelf("daemon_started");
    before = std::filesystem::file_size(path);
    AuditLog::Reservation r(*log);
    outbox.push_back(r.line("session_created", Peer{1000, 1000, 42}, {{"session", "abc"}}));
    EXPECT_EQ(outbox[0].first, 2);
    EXPECT_EQ(std::filesystem::file_size(path), before) << "line() must write nothing";
    r.write();
    EXPECT_GT(std::filesystem::file_size(path), before) << "write() appends the line at once";
  }
  const std::string kept = events(path).back().dump();
  cutTo(path, before);
  auto log = AuditLog::open(dir_);
  ASSERT_TRUE(log) << log.error().message();
  auto replayed = log->replay(outbox);
  ASSERT_TRUE(replayed) << replayed.error().message();
  EXPECT_EQ(*replayed, 1);
  const auto ev = events(path);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1].dump(), kept) << "the line comes back exactly as it was written";
  log->appendSelf("after");
  auto checked = verifyAuditLog(path);
  ASSERT_TRUE(checked) << checked.error().message();
  EXPECT_EQ(*checked, 3);
  // Again with the line in the file: nothing is added twice.
  auto again = AuditLog::open(dir_);
  ASSERT_TRUE(again);
  auto none = again->replay(outbox);
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, 0);
  EXPECT_EQ(events(path).size(), 3u);
}

TEST_F(AuditLogBatch, ControlWithoutTheOutboxTheLostLineStaysLost) {
  const std::string path = dir_ + "/audit.jsonl";
  std::uintmax_t before = 0;
  {
    auto log = AuditLog::open(dir_);
    ASSERT_TRUE(log);
    log->appendSelf("daemon_started");
    before = std::filesystem::file_size(path);
    AuditLog::Reservation r(*log);
    (void)r.line("session_created", Peer{1000, 1000, 42}, {{"session", "abc"}});
    r.write();
  }
  cutTo(path, before);
  auto log = AuditLog::open(dir_);
  ASSERT_TRUE(log);
  auto replayed = log->replay({});
  ASSERT_TRUE(replayed);
  EXPECT_EQ(*replayed, 0);
  for (const Json& e : events(path)) EXPECT_NE(e["event"], "session_created");
}

TEST_F(AuditLogBatch, AfterAGapTheEventIsAppendedAgainAsANewLineAndTheChainHolds) {
  const std::string path = dir_ + "/audit.jsonl";
  std::vector<std::pair<int64_t, std::string>> outbox;
  std::uintmax_t cut = 0;
  {
    auto log = AuditLog::open(dir_);
    ASSERT_TRUE(log);
    log->appendSelf("daemon_started");
    cut = std::filesystem::file_size(path);
    log->appendSelf("lost_with_the_tail");  // not in the outbox: a batch's line, say
    AuditLog::Reservation r(*log);
    outbox.push_back(r.line("session_created", Peer{1000, 1000, 42}, {{"session", "abc"}}));
    r.write();
  }
  cutTo(path, cut);
  auto log = AuditLog::open(dir_);
  ASSERT_TRUE(log);
  auto replayed = log->replay(outbox);
  ASSERT_TRUE(replayed) << replayed.error().message();
  EXPECT_EQ(*replayed, 1);
  const auto ev = events(path);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1]["event"], "session_created");
  EXPECT_EQ(ev[1]["session"], "abc");
  EXPECT_EQ(ev[1]["peer_uid"], 1000);
  EXPECT_EQ(ev[1]["replayed_seq"], 3);
  EXPECT_EQ(ev[1]["seq"], 2);
  auto checked = verifyAuditLog(path);
  ASSERT_TRUE(checked) << checked.error().message();
}

TEST_F(AuditLogBatch, AnOutboxLineThatIsNoAuditEventIsRefusedAndNothingIsWritten) {
  const std::string path = dir_ + "/audit.jsonl";
  auto log = AuditLog::open(dir_);
  ASSERT_TRUE(log);
  log->appendSelf("daemon_started");
  const auto size = std::filesystem::file_size(path);
  for (const std::string& bad : {std::string("not json"), std::string("[1,2]"), std::string("{\"seq\":2}"),
                                std::string("{\"event\":\"x\",\"prev\":\"p\",\"hash\":\"h\",\"peer_uid\":\"0\",\"peer_pid\":1}")}) {
    auto r = log->replay({{2, bad}});
    EXPECT_FALSE(r) << bad;
    EXPECT_EQ(std::filesystem::file_size(path), size) << bad;
  }
}

}  // namespace
}  // namespace corral::daemon
