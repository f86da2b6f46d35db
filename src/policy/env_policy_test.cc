// SPDX-License-Identifier: Apache-2.0
// Tests for the sandbox environment: fixed base, KEY=VALUE parsing, merging.
#include "policy/env_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>

namespace corral::policy::env {
namespace {

using Extras = std::vector<std::pair<std::string, std::string>>;

std::set<std::string> keysOf(const std::vector<std::string>& env) {
  std::set<std::string> keys;
  for (const std::string& kv : env) keys.insert(kv.substr(0, kv.find('=')));
  return keys;
}

TEST(BaseEnvironment, IsTheFixedMinimalSet) {
  std::vector<std::string> want = {
      "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
      "HOME=/workspace", "LANG=C.UTF-8", "USER=corral", "LOGNAME=corral", "TMPDIR=/tmp",
      "SHELL=/bin/sh",   "PWD=/workspace"};
  EXPECT_EQ(baseEnvironment(), want);
}

// Claim: nothing from the caller's environment passes. Control: the sentinel is really set.
TEST(BaseEnvironment, TakesNothingFromTheCallersEnvironment) {
  ASSERT_EQ(::setenv("CORRAL_SENTINEL_7F3A", "leak", 1), 0);
  ASSERT_EQ(::setenv("PATH", "/caller/bin", 1), 0);
  ASSERT_STREQ(std::getenv("CORRAL_SENTINEL_7F3A"), "leak");
  for (const auto& env : {baseEnvironment(), buildEnvironment({})}) {
    for (const std::string& kv : env) {
      EXPECT_EQ(kv.find("CORRAL_SENTINEL_7F3A"), std::string::npos) << kv;
      EXPECT_EQ(kv.find("/caller/bin"), std::string::npos) << kv;
    }
  }
}

TEST(ParseAssignment, AcceptsNamesAndAnyValueWithoutNul) {
  const std::pair<std::string, std::pair<std::string, std::string>> good[] = {
      {"FOO=bar", {"FOO", "bar"}},
      {"FOO=", {"FOO", ""}},
      {"_=x", {"_", "x"}},
      {"a_1=x=y", {"a_1", "x=y"}},
      {"K=multi\nline\ttab", {"K", "multi\nline\ttab"}},
      {"K= spaced ", {"K", " spaced "}},
      {std::string(255, 'K') + "=v", {std::string(255, 'K'), "v"}},
  };
  for (const auto& [text, want] : good) {
    auto r = parseAssignment(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.error().message();
    EXPECT_EQ(*r, want);
  }
}

TEST(ParseAssignment, RefusesBadNamesMissingEqualsAndNul) {
  const std::pair<std::string, std::string> bad[] = {
      {"FOO", "expected KEY=VALUE"},
      {"", "expected KEY=VALUE"},
      {"=v", "expected KEY=VALUE, the key is empty"},
      {"1A=v", "'1A' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"},
      {"A-B=v", "'A-B' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"},
      {"A B=v", "'A B' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"},
      {"A\nB=v", "'A\\nB' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"},
      {"\xc3\xa9=v", "'\xc3\xa9' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"},
      {std::string(256, 'K') + "=v", "the key is longer than 255 bytes"},
      {std::string("K=a\0b", 5), "the value contains a NUL byte"},
      {std::string("K\0=v", 4), "'K\\x00' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"},
  };
  for (const auto& [text, why] : bad) {
    auto r = parseAssignment(text);
    ASSERT_FALSE(r.ok()) << "accepted '" << text << "'";
    EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kInvalidArgument));
    EXPECT_EQ(r.error().message(), why);
  }
}

TEST(ParseAssignment, ErrorNeverEchoesTheValue) {
  const std::string secret = "corral-sentinel-7f3a";
  for (const std::string& text : {"9BAD=" + secret, std::string("K=") + secret + std::string(1, '\0')}) {
    auto r = parseAssignment(text);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message().find(secret), std::string::npos) << r.error().message();
  }
}

TEST(BuildEnvironment, WithoutExtrasIsTheBaseSorted) {
  std::vector<std::string> base = baseEnvironment();
  std::sort(base.begin(), base.end());
  EXPECT_EQ(buildEnvironment({}), base);
}

TEST(BuildEnvironment, AddsExtrasAndLaterAssignmentsWin) {
  std::vector<std::string> env = buildEnvironment(
      Extras{{"FOO", "1"}, {"HOME", "/elsewhere"}, {"FOO", "2"}, {"EMPTY", ""}, {"TERM", "xterm"}});
  EXPECT_TRUE(std::is_sorted(env.begin(), env.end()));
  EXPECT_EQ(keysOf(env).size(), env.size()) << "a key appears twice";
  EXPECT_NE(std::find(env.begin(), env.end(), "FOO=2"), env.end());
  EXPECT_EQ(std::find(env.begin(), env.end(), "FOO=1"), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "HOME=/elsewhere"), env.end());
  EXPECT_EQ(std::find(env.begin(), env.end(), "HOME=/workspace"), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "EMPTY="), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "TERM=xterm"), env.end());
  EXPECT_EQ(env.size(), baseEnvironment().size() + 3);
}

}  // namespace
}  // namespace corral::policy::env
