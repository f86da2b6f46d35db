// SPDX-License-Identifier: Apache-2.0
// Tests for the command gate: basename allowlist, argument hygiene, reasons that do not echo.
#include "policy/command_gate.h"

#include <gtest/gtest.h>

namespace corral::policy {
namespace {

const std::vector<std::string> kAllowed = {"python3", "ls", "git", "sh"};

CommandDecision run(std::string_view command, const std::vector<std::string>& args = {}) {
  return gateCommand(kAllowed, command, args);
}

void expectRefused(const CommandDecision& d, std::string_view rule, std::string_view in_reason = "") {
  EXPECT_FALSE(d.allowed) << "allowed, expected rule " << rule;
  EXPECT_EQ(d.rule, rule) << d.reason;
  EXPECT_TRUE(d.argv.empty());
  EXPECT_NE(d.reason.find(in_reason), std::string::npos) << d.reason;
  EXPECT_EQ(d.reason.find('\n'), std::string::npos) << d.reason;
}

TEST(CommandGate, AllowsAnAllowlistedBasenameWithPlainArgs) {
  auto d = run("python3", {"-m", "pytest", "tests/unit test.py", "--maxfail=1", "", "HEAD~1", "naïve-ü"});
  ASSERT_TRUE(d.allowed) << d.reason;
  EXPECT_EQ(d.rule, "allowlist");
  EXPECT_EQ(d.argv, (std::vector<std::string>{"python3", "-m", "pytest", "tests/unit test.py", "--maxfail=1", "",
                                              "HEAD~1", "naïve-ü"}));
  EXPECT_TRUE(d.env.empty());
}

TEST(CommandGate, DiscardsTheModelsDirectory) {
  for (std::string_view cmd : {"/tmp/x/python3", "../../python3", "./python3", "bin//python3"}) {
    auto d = run(cmd, {"-V"});
    ASSERT_TRUE(d.allowed) << cmd << ": " << d.reason;
    EXPECT_EQ(d.argv, (std::vector<std::string>{"python3", "-V"})) << cmd;
  }
}

TEST(CommandGate, RefusesEmptyDotAndDirectoryNames) {
  for (std::string_view cmd : {"", ".", "..", "dir/", "/", "/tmp/..", "a/."}) expectRefused(run(cmd), "command");
}

TEST(CommandGate, RefusesControlBytesAndBadUtf8InTheCommand) {
  expectRefused(run(std::string("python3\0", 8)), "command", "control byte 0x00");
  expectRefused(run("python3\n"), "command", "control byte 0x0a");
  expectRefused(run("/tmp/\xff/python3"), "command", "UTF-8");
  expectRefused(run("py;\x1b[2J"), "command", "control byte 0x1b");  // a metacharacter first hides nothing
}

TEST(CommandGate, BasenameCompareIsExactAndCaseSensitive) {
  for (std::string_view cmd : {"Python3", "python", "python3 ", " python3", "python3.11", "pyth", "perl"})
    expectRefused(run(cmd), "allowlist");
  // An operator entry with a directory never matches: the gate compares basenames only.
  expectRefused(gateCommand({"/usr/bin/python3"}, "/usr/bin/python3", {}), "allowlist");
  expectRefused(gateCommand({}, "python3", {}), "allowlist");
}

TEST(CommandGate, AllowlistedShellIsStillArgvOnly) {
  auto d = run("sh", {"-c", "echo hi"});
  ASSERT_TRUE(d.allowed) << d.reason;
  EXPECT_EQ(d.argv, (std::vector<std::string>{"sh", "-c", "echo hi"}));
  expectRefused(run("sh", {"-c", "echo hi; rm -rf /"}), "metachar", "';'");
}

TEST(CommandGate, RefusesEveryShellMetacharacter) {
  for (char c : kShellMetachars) {
    std::string arg = std::string("a") + c + "b";
    if (c == '~') arg = "~b";  // '~' is a metacharacter at the start (see TildeOnlyWhereAShellExpandsIt)
    auto d = run("ls", {"ok", arg});
    expectRefused(d, "metachar", std::string("argument 2 contains shell metacharacter '") + c + "'");
  }
}

TEST(CommandGate, TildeOnlyWhereAShellExpandsIt) {
  for (std::string_view a : {"~", "~/x", "~root", "--prefix=~/x", "PATH=/a:~/b"}) expectRefused(run("ls", {std::string(a)}), "metachar");
  for (std::string_view a : {"HEAD~1", "HEAD~", "a~b", "x/~y"}) EXPECT_TRUE(run("ls", {std::string(a)}).allowed) << a;
}

TEST(CommandGate, RefusesControlBytes) {
  for (int b : {0x00, 0x01, 0x09, 0x0a, 0x0d, 0x1b, 0x1f, 0x7f}) {
    std::string arg = "x";
    arg += static_cast<char>(b);
    expectRefused(run("ls", {arg}), "control", "argument 1 contains control byte");
  }
  expectRefused(run("ls", {"\xc2\x9b" "31m"}), "control", "C1");  // U+009B CSI
  EXPECT_TRUE(run("ls", {"\xc2\xa0"}).allowed);                    // U+00A0 is not a control
}

TEST(CommandGate, RefusesInvalidUtf8) {
  const std::string_view bad[] = {
      "\x80",                  // stray continuation
      "\xc0\xaf",              // overlong '/'
      "\xc1\xbf",              // overlong
      "\xe0\x80\xaf",          // overlong 3-byte
      "\xf0\x80\x80\xaf",      // overlong 4-byte
      "\xed\xa0\x80",          // U+D800 surrogate
      "\xed\xbf\xbf",          // U+DFFF surrogate
      "\xf4\x90\x80\x80",      // U+110000
      "\xf5\x80\x80\x80",      // beyond any code point
      "\xff",                  //
      "\xe2\x82",              // truncated
  };
  for (std::string_view b : bad) expectRefused(run("ls", {"ok", "ab" + std::string(b)}), "utf8", "argument 2 is not valid UTF-8");
  for (std::string_view good : {"\xed\x9f\xbf", "\xee\x80\x80", "\xf4\x8f\xbf\xbf", "\xf0\x9f\x98\x80", "\xe2\x82\xac"})
    EXPECT_TRUE(run("ls", {std::string(good)}).allowed) << good;
}

TEST(CommandGate, RefusesTooManyArguments) {
  std::vector<std::string> args(kMaxArgs, "a");
  EXPECT_TRUE(run("ls", args).allowed);
  args.push_back("a");
  expectRefused(run("ls", args), "limit");
}

TEST(CommandGate, RefusesAnOversizedArgument) {
  EXPECT_TRUE(run("ls", {std::string(kMaxArgBytes, 'a')}).allowed);
  expectRefused(run("ls", {"a", std::string(kMaxArgBytes + 1, 'a')}), "limit", "argument 2");
}

TEST(CommandGate, RefusesOversizedArgvInTotal) {
  size_t each = kMaxArgBytes;  // 8 of them plus terminators exceed 128 KiB
  std::vector<std::string> args(kMaxArgvBytes / each - 1, std::string(each - 1, 'a'));
  EXPECT_TRUE(run("ls", args).allowed);
  args.resize(kMaxArgvBytes / each + 1, std::string(each, 'a'));
  expectRefused(run("ls", args), "limit", "in total");
}

// Reasons go to the model and the trace: they name the argument and the character class,
// never the argument itself.
TEST(CommandGate, ReasonsNeverEchoTheArgument) {
  const std::string secret = "corral-sentinel-7f3a-" + std::string(100, 'z');
  const std::vector<std::string> hostile = {secret + ";", secret + "\n", secret + "\xff", std::string(kMaxArgBytes + 1, 'q') + secret};
  for (const std::string& a : hostile) {
    auto d = run("ls", {a});
    ASSERT_FALSE(d.allowed);
    EXPECT_EQ(d.reason.find("corral-sentinel"), std::string::npos) << d.reason;
    // 120, plus the literal_args opt-in a metacharacter refusal names (the program, never the argument).
    EXPECT_LE(d.reason.size(), d.rule == "metachar" ? 200u : 120u) << d.reason;
  }
  auto d = run("/x/" + secret, {});
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(d.reason.find(std::string(40, 'z')), std::string::npos) << "more than 32 bytes echoed: " << d.reason;
}

TEST(CommandGate, GitGoesThroughTheGitGate) {
  auto d = run("/usr/bin/git", {"status"});
  ASSERT_TRUE(d.allowed) << d.reason;
  EXPECT_EQ(d.argv.front(), "git");
  EXPECT_EQ(d.argv.back(), "status");
  EXPECT_FALSE(d.env.empty());
  expectRefused(run("git", {"-c", "core.pager=sh", "log"}), "git.global-option");
  // Only when git is allowlisted at all.
  expectRefused(gateCommand({"python3"}, "git", {"status"}), "allowlist");
}

}  // namespace
}  // namespace corral::policy

namespace corral::policy {
namespace {

// literal_args: the metacharacter rule is lifted for marked programs only, and the bytes pass
// unchanged; unmarked programs are still refused, and told how the operator opts in.
TEST(CommandGateLiteralArgs, AMarkedProgramGetsMetacharactersUnchanged) {
  const std::vector<std::string> args = {"-c", "print(6*7); import os\nx = {'a': [1]} # $HOME `id` *?!~\\\"'\t"};
  auto d = gateCommand(kAllowed, "python3", args, {"python3"});
  ASSERT_TRUE(d.allowed) << d.reason;
  EXPECT_EQ(d.rule, "allowlist.literal_args");
  EXPECT_EQ(d.argv, (std::vector<std::string>{"python3", args[0], args[1]}));
}

TEST(CommandGateLiteralArgs, UnmarkedProgramsAreStillRefusedAndToldHowToOptIn) {
  auto d = gateCommand(kAllowed, "ls", {"*.py"}, {"python3"});
  expectRefused(d, "metachar", "{\"name\": \"ls\", \"literal_args\": true}");
  expectRefused(gateCommand(kAllowed, "python3", {"-c", "print(1)"}), "metachar", "literal_args");
}

TEST(CommandGateLiteralArgs, ControlBytesUtf8AndLimitsStillRefuse) {
  for (const std::string& a : {std::string("a\rb"), std::string("a\x1b[2J"), std::string("\xff"), std::string("a\0b", 3)})
    EXPECT_FALSE(gateCommand(kAllowed, "python3", {a}, {"python3"}).allowed) << a;
  EXPECT_FALSE(gateCommand(kAllowed, "python3", {std::string(kMaxArgBytes + 1, 'a')}, {"python3"}).allowed);
  // git keeps its own gate even if a caller passed it as marked.
  EXPECT_FALSE(gateCommand(kAllowed, "git", {"log", "$(id)"}, {"git"}).allowed);
}

}  // namespace
}  // namespace corral::policy
