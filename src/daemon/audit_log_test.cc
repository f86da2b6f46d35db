// SPDX-License-Identifier: Apache-2.0
// AuditLog::Batch: lines written inside a batch are in the file at once (a kill -9 there
// loses none), and the chain across batches and plain appends verifies.
#include "daemon/audit_log.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

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

}  // namespace
}  // namespace corral::daemon
