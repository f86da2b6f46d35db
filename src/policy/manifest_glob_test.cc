// SPDX-License-Identifier: Apache-2.0
// Tests for inputGlobMatch and isGlob: '*' and '?' stay inside a component, "**" spans
// components, and nothing but a literal '.' reaches a dotfile.
#include <gtest/gtest.h>

#include <string>

#include "policy/manifest.h"

namespace corral::policy {
namespace {

struct Case {
  const char* pattern;
  const char* path;
  bool match;
};

void expectAll(std::initializer_list<Case> cases) {
  for (const Case& c : cases)
    EXPECT_EQ(inputGlobMatch(c.pattern, c.path), c.match) << "pattern '" << c.pattern << "' path '" << c.path << "'";
}

TEST(IsGlob, StarAndQuestionMarkOnly) {
  EXPECT_TRUE(isGlob("*.py"));
  EXPECT_TRUE(isGlob("src/**"));
  EXPECT_TRUE(isGlob("a?c"));
  EXPECT_FALSE(isGlob("src/main.py"));
  EXPECT_FALSE(isGlob("a[1].txt"));
  EXPECT_FALSE(isGlob(""));
}

TEST(InputGlobMatch, ExactPatternMatchesOnlyThatPath) {
  expectAll({{"README.md", "README.md", true},
             {"src/main.py", "src/main.py", true},
             {"src", "src/main.py", false},
             {"src/main.py", "src", false},
             {"README.md", "README.mdx", false},
             {"README.md", "readme.md", false},
             {"a[1].txt", "a[1].txt", true},
             {"a[1].txt", "a1.txt", false},
             {"a\\*", "a\\*", true}});
}

TEST(InputGlobMatch, StarStaysInOneComponent) {
  expectAll({{"src/*.py", "src/a.py", true},
             {"src/*.py", "src/.py", false},
             {"src/*.py", "src/a/b.py", false},
             {"*", "a", true},
             {"*", "a/b", false},
             {"*.py", "src/a.py", false},
             {"*a*b*", "xxaxxbxx", true},
             {"*a*b*", "xxbxxaxx", false},
             {"a*b*c", "abbbbc", true},
             {"a*b*c", "abcbcx", false},
             {"*.tar.gz", "x.tar.gz", true},
             {"*.tar.gz", "x.tar.gzz", false},
             {"*", "", false}});
}

TEST(InputGlobMatch, QuestionMarkIsOneCharacterNeverSlash) {
  expectAll({{"?.txt", "a.txt", true},
             {"?.txt", "ab.txt", false},
             {"?.txt", ".txt", false},
             {"a?b", "a/b", false},
             {"?", "\xc3\xa9", true},       // é: one character, two bytes
             {"??", "\xc3\xa9", false},
             {"caf?", "caf\xc3\xa9", true},
             {"*?", "\xc3\xa9", true},
             {"?", "\xf0\x9f\x98\x80", true}});  // one 4-byte character
}

TEST(InputGlobMatch, DoubleStarAtStartMiddleAndEnd) {
  expectAll({{"**/*.py", "a.py", true},
             {"**/*.py", "a/b/c.py", true},
             {"**/*.py", "a/b/c.txt", false},
             {"src/**/test_*.py", "src/test_a.py", true},
             {"src/**/test_*.py", "src/x/y/test_a.py", true},
             {"src/**/test_*.py", "srcx/test_a.py", false},
             {"src/**/test_*.py", "src/x/a_test.py", false},
             {"src/**", "src", false},  // below src, not src itself
             {"a/**/b", "a/b", true},     // a "**" inside may match zero components
             {"src/**", "src/a", true},
             {"src/**", "src/a/b/c", true},
             {"src/**", "srcx/a", false},
             {"src/**", "other/src/a", false},
             {"**", "a", true},
             {"**", "a/b/c", true},
             {"a/**/b/**/c", "a/b/c", true},
             {"a/**/b/**/c", "a/x/b/y/z/c", true},
             {"a/**/b/**/c", "a/x/y/c", false},
             {"**/**", "a/b", true},
             {"**/**", "a", true},
             {"**", "", false}});
}

TEST(InputGlobMatch, DotfilesNeedALiteralDot) {
  expectAll({{"**", ".env", false},
             {"**", "a/.git/config", false},
             {"src/**", "src/.env", false},
             {"**/*.py", ".hidden/a.py", false},
             {"*", ".env", false},
             {".*", ".env", true},
             {".github/*.yml", ".github/ci.yml", true},
             {".github/**", ".github/workflows/ci.yml", true},
             {"src/.env", "src/.env", true},
             {"src/.*", "src/.env", true}});
}

TEST(InputGlobMatch, PathsOutsideNormalFormNeverMatch) {
  expectAll({{"**", "a/../b", false},
             {"**", "./a", false},
             {"**", "a//b", false},
             {"*/**", "/etc/passwd", false},
             {"**", "a/", false},
             {"**", "", false},
             {"", "", false},
             {"", "a", false},
             {"src/**", "src/../.corral/x", false}});
}

TEST(InputGlobMatch, LongInputsFinishQuickly) {
  // Many stars against a near-miss: the greedy matcher is linear-ish per component, and
  // "**" is a table over components, so neither explodes.
  std::string pattern, path;
  for (int i = 0; i < 100; ++i) pattern += "*a";
  pattern += "*b";
  path.assign(250, 'a');
  EXPECT_FALSE(inputGlobMatch(pattern, path));
  pattern.clear();
  path.clear();
  for (int i = 0; i < 1000; ++i) {
    pattern += "**/";
    path += "d/";
  }
  pattern += "x";
  path += "y";
  EXPECT_FALSE(inputGlobMatch(pattern, path));
}

TEST(InputGlobMayMatchBelow, KnownCases) {
  struct Case {
    const char* pattern;
    const char* dir;
    bool may;
  };
  const Case cases[] = {
      {"src/*.c", "src", true},          {"src/*.c", "node_modules", false}, {"src/*.c", "src/sub", false},
      {"src/**", "src", true},           {"src/**", "src/a/b", true},        {"src/**", "lib", false},
      {"**", "a/b/c", true},             {"**", ".git", false},              {"**/x", "a/b", true},
      {"**/.env", "a", true},            {"a/b", "a", true},                 {"a/b", "a/b", false},
      {"*/x", "d", true},                {"*/x", ".d", false},               {".cfg/*", ".cfg", true},
      {"a/**/b/*", "a/x/y/b", true},     {"a/**/b", "c", false},             {"x", "x", false},
      {"src/*.c", "src/../x", false},    {"", "a", false},                   {"a/*", "", false},
  };
  for (const Case& c : cases) EXPECT_EQ(inputGlobMayMatchBelow(c.pattern, c.dir), c.may) << c.pattern << " under " << c.dir;
}

// The pruning is only sound if it never skips a directory holding a match: every path that
// inputGlobMatch accepts must have each of its ancestors accepted here. Exhaustive over a
// small alphabet of components and patterns.
TEST(InputGlobMayMatchBelow, NeverPrunesADirectoryHoldingAMatch) {
  const std::vector<std::string> comps = {"a", "b", "ab", ".h"};
  const std::vector<std::string> pats = {"a", "*", "?", "a*", "*b", ".h", "**", ".*"};
  std::vector<std::string> paths = {""};
  std::vector<std::string> all;
  for (int depth = 0; depth < 4; ++depth) {
    std::vector<std::string> longer;
    for (const std::string& p : paths)
      for (const std::string& c : comps) longer.push_back(p.empty() ? c : p + "/" + c);
    all.insert(all.end(), longer.begin(), longer.end());
    paths = std::move(longer);
  }
  std::vector<std::string> patterns;
  for (const std::string& x : pats) {
    patterns.push_back(x);
    for (const std::string& y : pats) {
      patterns.push_back(x + "/" + y);
      for (const std::string& z : {std::string("a"), std::string("**"), std::string("*")}) patterns.push_back(x + "/" + y + "/" + z);
    }
  }
  size_t checked = 0;
  for (const std::string& pat : patterns)
    for (const std::string& path : all) {
      if (!inputGlobMatch(pat, path)) continue;
      for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
        ++checked;
        ASSERT_TRUE(inputGlobMayMatchBelow(pat, path.substr(0, slash))) << pat << " matches " << path;
      }
    }
  EXPECT_GT(checked, 1000u);
}

}  // namespace
}  // namespace corral::policy
