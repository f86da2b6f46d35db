// SPDX-License-Identifier: Apache-2.0
// audit.chain-tamper-evident: every way of damaging trace.jsonl is detected and located
// (leveldb LogTest style: one damage case per test, plus a control and two properties).
#include <gtest/gtest.h>

#include <random>

#include "audit/canonical_json.h"
#include "audit/record_dir.h"
#include "audit/result.h"
#include "base/sha256.h"
#include "audit/trace.h"
#include "audit/trace_chain.h"
#include "audit_fixture.h"

namespace corral::audit {
namespace {

using namespace corral::audit::testing;

class AuditChainTamperEvident : public ::testing::Test {
 protected:
  static constexpr int kEntries = 8;
  void SetUp() override {
    writeSampleRecord(ws_.path(), kEntries, nullptr);
    lines_ = readLines(tracePath(ws_.path()));
    ASSERT_EQ(lines_.size(), static_cast<size_t>(kEntries));
    head_ = sha256Hex(lines_.back());
    VerifyReport r = verifyWorkspace(ws_.path());
    ASSERT_TRUE(r.ok) << "control: the untouched record must verify: " << r.failure;
  }
  // What verify says after the trace is replaced by lines.
  std::string failureWith(const std::vector<std::string>& lines, std::optional<std::string> trusted = std::nullopt) {
    writeLines(tracePath(ws_.path()), lines);
    VerifyReport r = verifyWorkspace(ws_.path(), nullptr, std::move(trusted));
    EXPECT_FALSE(r.ok) << "audit.chain-tamper-evident broken: damaged trace verified";
    return r.failure;
  }
  // A line that chains correctly after `after`: what a forger without the result can build.
  static std::string forgedLine(uint64_t seq, const std::string& after) {
    ChainState s{seq, after.empty() ? std::string(kZeroHash) : sha256Hex(after)};
    auto l = encodeTraceLine(s, 1, "tool_call", {{"tool", "run"}, {"argv", {"rm", "-rf", "/"}}});
    EXPECT_TRUE(l.ok());
    return *l;
  }

  TempDir ws_;
  std::vector<std::string> lines_;
  std::string head_;
};

TEST_F(AuditChainTamperEvident, ControlUntouchedRecordVerifiesWithTrustedHead) {
  VerifyReport r = verifyWorkspace(ws_.path(), nullptr, head_);
  EXPECT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.trace_count, static_cast<uint64_t>(kEntries));
  EXPECT_EQ(r.trace_head, head_);
}

TEST_F(AuditChainTamperEvident, EditedEntry) {
  auto l = lines_;
  size_t at = l[2].find("\"exit\":");
  ASSERT_NE(at, std::string::npos);
  l[2][at + 7] = l[2][at + 7] == '0' ? '1' : '0';  // still canonical, still valid JSON
  EXPECT_EQ(failureWith(l), "trace line 4: prev does not match line 3");
}

TEST_F(AuditChainTamperEvident, EditedLastEntry) {
  auto l = lines_;
  size_t at = l.back().find("\"finished\"");
  ASSERT_NE(at, std::string::npos);
  l.back().replace(at, 10, "\"aborted\"");
  EXPECT_EQ(failureWith(l), "trace line 8 (the last): its hash does not match commitments.trace_head");
}

TEST_F(AuditChainTamperEvident, DeletedEntry) {
  auto l = lines_;
  l.erase(l.begin() + 3);
  EXPECT_EQ(failureWith(l),
            "trace line 4: prev does not match line 3 (seq is 4, expected 3: a line was removed, inserted or moved)");
}

TEST_F(AuditChainTamperEvident, DeletedFirstEntry) {
  auto l = lines_;
  l.erase(l.begin());
  EXPECT_EQ(failureWith(l),
            "trace line 1: prev is not the genesis hash (64 zeros) (seq is 1, expected 0: a line was removed, "
            "inserted or moved)");
}

TEST_F(AuditChainTamperEvident, InsertedEntry) {
  auto l = lines_;
  l.insert(l.begin() + 2, forgedLine(2, l[1]));  // chains onto line 2 perfectly
  EXPECT_EQ(failureWith(l),
            "trace line 4: prev does not match line 3 (seq is 2, expected 3: a line was removed, inserted or moved)");
}

TEST_F(AuditChainTamperEvident, ReorderedEntries) {
  auto l = lines_;
  std::swap(l[4], l[5]);
  EXPECT_EQ(failureWith(l),
            "trace line 5: prev does not match line 4 (seq is 5, expected 4: a line was removed, inserted or moved)");
}

TEST_F(AuditChainTamperEvident, TruncatedTail) {
  auto l = lines_;
  l.resize(l.size() - 2);
  EXPECT_EQ(failureWith(l), "trace has 6 lines but result.json commits 8: the tail was truncated");
}

TEST_F(AuditChainTamperEvident, TruncatedToEmpty) {
  EXPECT_EQ(failureWith({}), "trace has 0 lines but result.json commits 8: the tail was truncated");
}

TEST_F(AuditChainTamperEvident, TruncatedMidLine) {
  std::string all = readFile(tracePath(ws_.path()));
  writeFile(tracePath(ws_.path()), all.substr(0, all.size() - 20));
  VerifyReport r = verifyWorkspace(ws_.path());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.failure, "trace line 8: no newline at the end (truncated mid-line?)");
}

TEST_F(AuditChainTamperEvident, AppendedEntry) {
  auto l = lines_;
  l.push_back(forgedLine(kEntries, l.back()));
  EXPECT_EQ(failureWith(l), "trace has 9 lines but result.json commits 8: lines were appended after the result");
}

TEST_F(AuditChainTamperEvident, NonCanonicalRewriteOfAnEntry) {
  auto l = lines_;
  auto j = nlohmann::json::parse(l[1]);
  l[1] = j.dump(1);  // same values, other bytes: the hash is over bytes, so this must fail
  std::string f = failureWith(l);
  EXPECT_EQ(f.rfind("trace line 2: ", 0), 0u) << f;
}

TEST_F(AuditChainTamperEvident, TrustedHeadMismatch) {
  // A forger without a signing key truncates the tail and rewrites result.json to match:
  // only a head retained elsewhere can tell (docs/audit-format.md, "What it does not prove").
  auto l = lines_;
  l.resize(5);
  writeLines(tracePath(ws_.path()), l);
  recommit(ws_.path(), nullptr);
  EXPECT_TRUE(verifyWorkspace(ws_.path()).ok) << "unsigned and unanchored, a consistent rewrite verifies";
  VerifyReport r = verifyWorkspace(ws_.path(), nullptr, head_);
  EXPECT_FALSE(r.ok) << "audit.chain-tamper-evident broken: a rewritten trace matched the trusted head";
  EXPECT_EQ(r.failure, "trace head " + sha256Hex(l.back()) + " differs from the trusted head " + head_);
}

TEST_F(AuditChainTamperEvident, BrokenChainRefusesAppend) {
  auto l = lines_;
  l[2].replace(l[2].find("\"tool\":\"run\""), 12, "\"tool\":\"rum\"");
  writeLines(tracePath(ws_.path()), l);
  const std::string before = readFile(tracePath(ws_.path()));
  auto w = TraceWriter::openInWorkspace(ws_.path());
  ASSERT_FALSE(w.ok()) << "audit.chain-tamper-evident broken: a writer opened a broken chain";
  EXPECT_EQ(w.error().message(), "refusing to append to a broken trace: trace line 4: prev does not match line 3");
  EXPECT_EQ(readFile(tracePath(ws_.path())), before) << "the broken trace was modified";
}

// PROPERTY: whatever the writer writes (any types, nesting, strings with escapes and
// non-ASCII, across several reopenings), verify accepts it.
TEST_F(AuditChainTamperEvident, VerifyAcceptsEveryTraceTheWriterProduced) {
  const std::string alphabet[] = {"a", "Z", "0", " ", "\"", "\\", "\n", "\t", std::string(1, '\x01'), "\x7f", "/",
                                  "\xc3\xa9", "\xe2\x9c\x93", "\xf0\x9f\x98\x80", "\xef\xac\xb3"};
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
    std::function<nlohmann::json(int)> value = [&](int depth) -> nlohmann::json {
      switch (depth > 3 ? pick(4) : pick(6)) {
        case 0: return pick(2) == 0;
        case 1: return nullptr;
        case 2: return static_cast<int64_t>(rng() % 2000000) - 1000000;
        case 3: {
          std::string s;
          for (int i = pick(12); i > 0; --i) s += alphabet[pick(std::size(alphabet))];
          return s;
        }
        case 4: {
          nlohmann::json a = nlohmann::json::array();
          for (int i = pick(4); i > 0; --i) a.push_back(value(depth + 1));
          return a;
        }
        default: {
          nlohmann::json o = nlohmann::json::object();
          for (int i = pick(4); i > 0; --i) o[alphabet[pick(std::size(alphabet))] + std::to_string(i)] = value(depth + 1);
          return o;
        }
      }
    };
    TempDir ws;
    for (int session = 0; session < 3; ++session) {
      auto w = TraceWriter::openInWorkspace(ws.path());
      ASSERT_TRUE(w.ok()) << "seed " << seed << ": " << w.error().message();
      for (int i = pick(6); i >= 0; --i) {
        nlohmann::json data = nlohmann::json::object();
        for (int k = pick(5); k > 0; --k) data["f" + std::to_string(k)] = value(0);
        ASSERT_TRUE(w->append("t" + std::to_string(pick(3)), data).ok()) << "seed " << seed;
      }
      auto dir = openRecordDir(ws.path(), false);
      ASSERT_TRUE(dir.ok());
      ASSERT_TRUE(finishRecord(*dir, *w, sha256Hex("m"), {{"session", session}}, nullptr).ok());
      VerifyReport r = verifyWorkspace(ws.path(), nullptr, w->head());
      ASSERT_TRUE(r.ok) << "seed " << seed << " session " << session << ": " << r.failure;
      EXPECT_EQ(r.trace_count, w->count());
    }
  }
}

// PROPERTY: flipping any single bit of trace.jsonl (each of 8 bits of every byte) is
// detected. Checked against result.json alone, no key or trusted head needed.
TEST_F(AuditChainTamperEvident, EveryBitFlipInTheTraceIsDetected) {
  const std::string path = tracePath(ws_.path());
  const std::string original = readFile(path);
  size_t accepted = 0;
  for (size_t i = 0; i < original.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      xorByte(path, i, static_cast<unsigned char>(1 << bit));
      VerifyReport r = verifyWorkspace(ws_.path());
      xorByte(path, i, static_cast<unsigned char>(1 << bit));
      if (r.ok) {
        ++accepted;
        ADD_FAILURE() << "audit.chain-tamper-evident broken: bit " << bit << " of byte " << i << " flipped, verified";
      }
    }
  }
  EXPECT_EQ(accepted, 0u) << "of " << original.size() * 8 << " single-bit mutations";
  EXPECT_EQ(readFile(path), original);
  EXPECT_TRUE(verifyWorkspace(ws_.path()).ok) << "control: the restored trace verifies again";
}

}  // namespace
}  // namespace corral::audit
