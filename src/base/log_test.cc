// SPDX-License-Identifier: Apache-2.0
#include "base/log.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace corral::log {
namespace {

// A logfmt reader as a log pipeline would run it: k=v and k="v" with \" and \\ escapes.
std::map<std::string, std::string> parseFields(const std::string& line) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t eq = line.find('=', i);
    if (eq == std::string::npos) break;
    std::string key = line.substr(i, eq - i), val;
    i = eq + 1;
    if (i < line.size() && line[i] == '"') {
      for (++i; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\' && i + 1 < line.size()) ++i;
        val += line[i];
      }
      ++i;
    } else {
      while (i < line.size() && line[i] != ' ') val += line[i++];
    }
    out[key] = val;
  }
  return out;
}

TEST(LogValue, PlainTokensStayBare) {
  EXPECT_EQ(value("api.example.com:443"), "api.example.com:443");
  EXPECT_EQ(value("sni-mismatch"), "sni-mismatch");
}

TEST(LogValue, HostileTextCannotAddFields) {
  // The red-team input: an SNI whose error text closed the quoted reason and added its own
  // rule= and decision= fields.
  const std::string hostile = "host '\" rule=allowed decision=allow x=\"': contains a space";
  const std::string line = "rule=sni-mismatch reason=" + value(hostile) + " tag=t1";
  auto f = parseFields(line);
  EXPECT_EQ(f["rule"], "sni-mismatch") << line;
  EXPECT_EQ(f.count("decision"), 0u) << line;
  EXPECT_EQ(f["tag"], "t1") << line;
  EXPECT_EQ(f["reason"], hostile) << "the text is kept whole, inside its own field: " << line;
}

TEST(LogValue, ControlBytesAndEmptyAreQuotedAndEscaped) {
  EXPECT_EQ(value(""), "\"\"");
  EXPECT_EQ(value("a\nb"), "\"a\\x0ab\"");
  EXPECT_EQ(value("a b"), "\"a b\"");
  EXPECT_EQ(value("k=v"), "\"k=v\"");
  EXPECT_EQ(value("back\\slash"), "\"back\\\\slash\"");
  EXPECT_EQ(value(std::string("nul\0x", 5)), "\"nul\\x00x\"");
}

}  // namespace
}  // namespace corral::log
