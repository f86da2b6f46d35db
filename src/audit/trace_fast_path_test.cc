// SPDX-License-Identifier: Apache-2.0
// The fast path may only ever accept what the strict path accepts, with the same header.
#include "audit/trace_fast_path.h"

#include <random>

#include <gtest/gtest.h>

#include "audit/canonical_json.h"
#include "base/sha256.h"
#include "audit/trace_chain.h"

namespace corral::audit {
namespace {

using nlohmann::json;

std::string line(const json& data, uint64_t seq = 0, std::string type = "tool_call") {
  ChainState st;
  st.count = seq;
  auto l = encodeTraceLine(st, 1700000000000, type, data);
  EXPECT_TRUE(l.ok());
  return *l;
}

// What the strict path says about a line's form (chain linkage aside): canonical JSON with
// exactly the entry's fields, each well-formed, and data within the string cap.
bool strictAccepts(std::string_view l) {
  auto e = parseCanonicalJson(l);
  if (!e.ok() || !e->is_object() || e->size() != 6) return false;
  for (const char* f : {"data", "prev", "seq", "ts_ms", "type", "v"})
    if (!e->contains(f)) return false;
  const json& j = *e;
  return j["v"] == 1 && j["prev"].is_string() && isSha256Hex(j["prev"].get<std::string>()) &&
         j["seq"].is_number_integer() && j["seq"].get<int64_t>() >= 0 && j["ts_ms"].is_number_integer() &&
         j["ts_ms"].get<int64_t>() >= 0 && j["type"].is_string() && isTraceType(j["type"].get<std::string>()) &&
         checkTraceData(j["data"]).ok();
}

TEST(TraceFastPath, AcceptsWhatTheWriterProduces) {
  const json samples[] = {
      json::object(),
      {{"a", 1}, {"b", "x"}, {"c", {1, 2, {{"d", nullptr}}}}, {"e", true}, {"f", -5}},
      {{"s", std::string("tab\there \"q\" back\\slash \x01\x1f nl\n")}},
      {{"u", "caf\xc3\xa9 \xf0\x9f\x98\x80"}},
      {{"big", 9007199254740991}, {"neg", -9007199254740991}},
  };
  for (const json& d : samples) {
    const std::string l = line(d);
    auto h = fastTraceLine(l);
    ASSERT_TRUE(h.has_value()) << l;
    EXPECT_EQ(h->seq, 0u);
    EXPECT_EQ(h->prev, std::string(64, '0'));
  }
}

TEST(TraceFastPath, FallsBackOnAnythingItCannotProve) {
  const std::string good = line({{"a", 1}});
  for (std::string bad : {
           std::string("{\"data\":{\"a\":1} ,") + good.substr(good.find("\"prev\"")),  // whitespace
           good.substr(0, good.size() - 1),                                              // truncated
           good + " ",
       })
    EXPECT_FALSE(fastTraceLine(bad).has_value()) << bad;
  // Unicode escapes, non-canonical number forms, unsorted or duplicate keys.
  auto swap = [&](std::string from, std::string to) {
    std::string s = line({{"a", 1}, {"b", 2}});
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  EXPECT_FALSE(fastTraceLine(swap("\"b\":2", "\"a\":2")).has_value());
  EXPECT_FALSE(fastTraceLine(swap("{\"a\":1,\"b\":2}", "{\"b\":2,\"a\":1}")).has_value());
  EXPECT_FALSE(fastTraceLine(swap("\"a\":1", "\"a\":1.0")).has_value());
  EXPECT_FALSE(fastTraceLine(swap("\"a\":1", "\"a\":01")).has_value());
  EXPECT_FALSE(fastTraceLine(swap("\"a\":1", "\"a\":-0")).has_value());
  EXPECT_FALSE(fastTraceLine(swap("\"a\":1", "\"a\":\"\\u0041\"")).has_value());
  EXPECT_FALSE(fastTraceLine(swap("\"a\":1", "\"a\":\"\\/\"")).has_value());
  EXPECT_FALSE(fastTraceLine(swap("\"a\":1", "\"a\":9007199254740992")).has_value());
  // A string over the trace cap (the writer refuses to make one): never accepted here.
  std::string longer = line({{"long", std::string(4096, 'x')}});
  ASSERT_TRUE(fastTraceLine(longer).has_value());
  longer.insert(longer.find("xxxx"), "x");
  EXPECT_FALSE(fastTraceLine(longer).has_value());
  EXPECT_FALSE(strictAccepts(longer));
}

TEST(TraceFastPath, NeverAcceptsWhatTheStrictPathRefuses) {
  // Every single-byte mutation of real lines: whenever the fast path accepts, so must the
  // strict one (and with the same seq).
  std::mt19937 rng(7);
  const std::string bases[] = {
      line({{"a", 1}, {"b", "x y"}, {"c", {1, {{"d", false}}}}}),
      line({{"s", std::string("\x01\ttab\"")}, {"u", "\xc3\xa9"}}),
  };
  const std::string alphabet = "{}[]\":,0123456789-.eE\\ntrufalsbx\x01\x7f\xc3\xa9 ";
  int accepted = 0;
  for (const std::string& base : bases) {
    for (size_t i = 0; i < base.size(); ++i) {
      for (char ch : alphabet) {
        std::string m = base;
        m[i] = ch;
        if (m == base) continue;
        auto fast = fastTraceLine(m);
        if (!fast) continue;
        ++accepted;
        EXPECT_TRUE(strictAccepts(m)) << "fast path accepted a line the strict path refuses: " << m;
      }
    }
  }
  EXPECT_GT(accepted, 10);  // some mutations stay valid (digits, letters in strings)
}

}  // namespace
}  // namespace corral::audit
