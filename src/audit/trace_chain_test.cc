// SPDX-License-Identifier: Apache-2.0
// ChainVerifier: each structural rule of a trace line, with the message it gives.
#include "audit/trace_chain.h"

#include <gtest/gtest.h>

namespace corral::audit {
namespace {

std::string lineAt(const ChainState& s, const nlohmann::json& data = {{"k", 1}}) {
  auto l = encodeTraceLine(s, 5, "step", data);
  EXPECT_TRUE(l.ok()) << l.error().message();
  return l ? *l : "";
}

std::string firstError(const std::string& line) {
  ChainVerifier v;
  auto r = v.addLine(line);
  return r ? "" : r.error().message();
}

TEST(ChainVerifier, AcceptsWhatEncodeProduces) {
  ChainVerifier v;
  for (int i = 0; i < 5; ++i) {
    std::string l = lineAt(v.state());
    ASSERT_TRUE(v.addLine(l).ok());
    EXPECT_EQ(v.state().head, sha256Hex(l));
  }
  EXPECT_EQ(v.state().count, 5u);
}

TEST(ChainVerifier, NamesEachStructuralFault) {
  const std::string z(kZeroHash);
  const std::pair<std::string, std::string> cases[] = {
      {"", "trace line 1: empty line"},
      {"[1]", "trace line 1: not a JSON object"},
      {R"({"data":{},"prev":")" + z + R"(","seq":0,"ts_ms":1,"type":"a"})", "trace line 1: missing field \"v\""},
      {R"({"data":{},"extra":1,"prev":")" + z + R"(","seq":0,"ts_ms":1,"type":"a","v":1})",
       "trace line 1: unknown field (allowed: data prev seq ts_ms type v)"},
      {R"({"data":{},"prev":")" + z + R"(","seq":0,"ts_ms":1,"type":"a","v":2})",
       "trace line 1: \"v\" is not 1 (unknown format version)"},
      {R"({"data":{},"prev":"00","seq":0,"ts_ms":1,"type":"a","v":1})",
       "trace line 1: \"prev\" is not 64 lowercase hex digits"},
      {R"({"data":{},"prev":")" + z + R"(","seq":-1,"ts_ms":1,"type":"a","v":1})",
       "trace line 1: \"seq\" is not a non-negative integer"},
      {R"({"data":{},"prev":")" + z + R"(","seq":0,"ts_ms":"now","type":"a","v":1})",
       "trace line 1: \"ts_ms\" is not a non-negative integer"},
      {R"({"data":{},"prev":")" + z + R"(","seq":0,"ts_ms":1,"type":"A","v":1})",
       "trace line 1: \"type\" does not match [a-z][a-z0-9_]{0,31}"},
      {R"({"data":[],"prev":")" + z + R"(","seq":0,"ts_ms":1,"type":"a","v":1})",
       "trace line 1: data is not a JSON object"},
      {R"({"data":{},"prev":")" + std::string(64, '1') + R"(","seq":0,"ts_ms":1,"type":"a","v":1})",
       "trace line 1: prev is not the genesis hash (64 zeros)"},
      {R"({"data":{},"prev":")" + z + R"(","seq":1,"ts_ms":1,"type":"a","v":1})", "trace line 1: seq is 1, expected 0"},
      {R"({"v":1,"data":{},"prev":")" + z + R"(","seq":0,"ts_ms":1,"type":"a"})",
       "trace line 1: not in canonical form (first difference at byte 2)"},
  };
  for (const auto& [line, want] : cases) EXPECT_EQ(firstError(line), want) << line;
}

TEST(ChainVerifier, RefusesOverlongLinesAndStrings) {
  EXPECT_EQ(firstError(std::string(kMaxTraceLineBytes + 1, 'x')), "trace line 1: longer than 65536 bytes");
  const std::string z(kZeroHash);
  std::string line = R"({"data":{"x":")" + std::string(kMaxTraceStringBytes + 1, 'a') + R"("},"prev":")" + z +
                     R"(","seq":0,"ts_ms":1,"type":"a","v":1})";
  EXPECT_EQ(firstError(line),
            "trace line 1: data.x is 4097 bytes (limit 4096): trace ids, sizes and hashes, not contents");
}

}  // namespace
}  // namespace corral::audit
