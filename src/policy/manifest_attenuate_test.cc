// SPDX-License-Identifier: Apache-2.0
// Tests for attenuate: a spawn scope can narrow every field and widen none, budgets above
// what is left are refused (never clamped), and the scope itself is parsed strictly.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "policy/manifest.h"

namespace corral::policy {
namespace {

using Json = nlohmann::json;
using std::chrono::milliseconds;

constexpr const char* kParent = R"({
  "version": 1, "task": "parent task",
  "model": {"provider": "ollama", "endpoint": "http://localhost:11434", "model": "qwen"},
  "inputs": ["src/**", "README.md", "docs/*.md", ".github/**"],
  "outputs": ["src/fix.py", "out/report.txt"],
  "executables": ["python3", "git"],
  "env": ["A=1", "B=2"],
  "budgets": {"max_turns": 20, "max_model_calls": 40, "wall_time": "10m", "command_timeout": "60s",
              "max_output_bytes": "64K", "max_loops": 4, "max_pending_tasks": 2},
  "sandbox": {"memory": "512M", "pids": 64, "allow_weaker": ["memory"]}
})";

Manifest parent() {
  auto r = parseManifest(kParent);
  EXPECT_TRUE(r.ok()) << r.error().message();
  return *r;
}

Remaining left() { return Remaining{30, milliseconds(5 * 60000), 1, 3}; }

Result<Manifest> spawn(const Json& scope, const Remaining& l = left()) {
  return attenuate(parent(), l, "child task", scope.dump());
}

void expectError(const Result<Manifest>& r, Errc code, const std::string& want, const std::string& note) {
  ASSERT_FALSE(r.ok()) << "accepted: " << note;
  const std::string msg = r.error().message();
  EXPECT_EQ(r.error().code(), static_cast<int>(code)) << msg;
  EXPECT_EQ(msg.rfind("scope: ", 0), 0u) << msg;
  EXPECT_NE(msg.find(want), std::string::npos) << "want '" << want << "' in: " << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

void expectRefused(const Json& scope, const std::string& want) {
  expectError(spawn(scope), Errc::kRefused, want, scope.dump());
}

TEST(Attenuate, EmptyScopeInheritsListsAndTakesWhatIsLeft) {
  auto r = spawn(Json::object());
  ASSERT_TRUE(r.ok()) << r.error().message();
  const Manifest p = parent();
  const Manifest& c = *r;
  EXPECT_EQ(c.task, "child task");
  EXPECT_EQ(c.model, p.model);
  EXPECT_EQ(c.inputs, p.inputs);
  EXPECT_EQ(c.outputs, p.outputs);
  EXPECT_EQ(c.executables, p.executables);
  EXPECT_EQ(c.env, p.env);
  EXPECT_EQ(c.network, p.network);
  EXPECT_EQ(c.credentials, p.credentials);
  EXPECT_EQ(c.sandbox, p.sandbox);
  EXPECT_EQ(c.budgets.max_turns, 20u);
  EXPECT_EQ(c.budgets.max_model_calls, 30u);            // left, below the parent's 40
  EXPECT_EQ(c.budgets.wall_time, milliseconds(300000)); // left, below the parent's 10m
  EXPECT_EQ(c.budgets.command_timeout, milliseconds(60000));
  EXPECT_EQ(c.budgets.max_output_bytes, 64u * 1024);
  EXPECT_EQ(c.budgets.max_loops, 3u);
  EXPECT_EQ(c.budgets.max_pending_tasks, 1u);
}

TEST(Attenuate, NarrowingEveryFieldIsAccepted) {
  Json scope = {
      {"inputs", {"src/a.py", "src/lib/*.py", "src/**/test_*.py", "src/**", "README.md", "docs/*.md",
                  ".github/workflows/ci.yml", ".github/*.yml"}},
      {"outputs", {"src/fix.py"}},
      {"executables", {"git"}},
      {"env", {"A=1"}},
      {"budgets",
       {{"max_turns", 5}, {"max_model_calls", 10}, {"wall_time", "1m"}, {"command_timeout", "10s"},
        {"max_output_bytes", "1K"}, {"max_loops", 1}, {"max_pending_tasks", 0}}},
  };
  auto r = spawn(scope);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->inputs.size(), 8u);
  EXPECT_EQ(r->outputs, (std::vector<std::string>{"src/fix.py"}));
  EXPECT_EQ(r->executables, (std::vector<std::string>{"git"}));
  EXPECT_EQ(r->env, (std::vector<std::string>{"A=1"}));
  EXPECT_EQ(r->budgets.max_turns, 5u);
  EXPECT_EQ(r->budgets.max_model_calls, 10u);
  EXPECT_EQ(r->budgets.wall_time, milliseconds(60000));
  EXPECT_EQ(r->budgets.command_timeout, milliseconds(10000));
  EXPECT_EQ(r->budgets.max_output_bytes, 1024u);
  EXPECT_EQ(r->budgets.max_loops, 1u);
  EXPECT_EQ(r->budgets.max_pending_tasks, 0u);
  // Empty lists narrow to nothing.
  r = spawn({{"inputs", Json::array()}, {"outputs", Json::array()}, {"executables", Json::array()}});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->inputs.empty() && r->outputs.empty() && r->executables.empty());
}

TEST(Attenuate, InputsCannotWiden) {
  const char* cases[] = {
      "etc/passwd",      // no parent pattern covers it
      "src/.env",        // "src/**" does not enter dotfiles
      "src/.git/*",      // nor dot directories
      "src/*/.hidden",   // a literal dot component below the prefix
      "*.py",            // a glob at the root is not under "src/**"
      "**",              // the whole workspace
      "docs/**",         // "docs/*.md" is not a "dir/**" pattern
      "docs/*",          // wider than "docs/*.md"
      "docs/sub/*.md",   // "docs/*.md" does not reach sub/
      "srcx/**",         // shares a string prefix, not a directory
      "README.md/x",
      "src",             // "src/**" is what lies below src, not src itself
      ".github",
  };
  for (const char* input : cases) {
    Json scope = {{"inputs", {input}}};
    auto r = spawn(scope);
    expectError(r, Errc::kRefused, "inputs[0]: ", input);
    if (!r.ok()) {
      EXPECT_NE(r.error().message().find("is not covered by the parent's inputs"), std::string::npos);
    }
  }
}

TEST(Attenuate, InvalidInputsAreInvalidNotJustUncovered) {
  for (const char* input : {"/etc/passwd", "src/../../etc/passwd", ".corral/trace.jsonl", "src//a", "a**"})
    expectError(spawn({{"inputs", {input}}}), Errc::kInvalidArgument, "inputs[0]: ", input);
}

TEST(Attenuate, OutputsExecutablesAndEnvMustBeExactMembers) {
  expectRefused({{"outputs", {"src/other.py"}}}, "outputs[0]: not among the parent's outputs");
  expectRefused({{"outputs", {"src/fix.py", "out/report.txt", "out/extra.txt"}}}, "outputs[2]: not among");
  expectRefused({{"executables", {"bash"}}}, "executables[0]: not among the parent's executables");
  expectRefused({{"env", {"A=2"}}}, "env[0]: not among the parent's env entries");
  expectRefused({{"env", {"C=3"}}}, "env[0]: not among the parent's env entries");
  expectError(spawn({{"outputs", {"src/*.py"}}}), Errc::kInvalidArgument, "outputs[0]: ", "glob output");
  expectError(spawn({{"outputs", {".corral/x"}}}), Errc::kInvalidArgument, "outputs[0]: ", ".corral");
  expectError(spawn({{"executables", {"/usr/bin/python3"}}}), Errc::kInvalidArgument, "is a path", "path");
  expectError(spawn({{"env", {"LD_PRELOAD=/x.so"}}}), Errc::kInvalidArgument, "may not be set", "LD_PRELOAD");
  expectError(spawn({{"outputs", {"src/fix.py", "src/fix.py"}}}), Errc::kInvalidArgument, "repeats", "dup");
}

TEST(Attenuate, BudgetsAboveTheCeilingAreRefusedNamingBothNumbers) {
  const std::tuple<const char*, Json, const char*> cases[] = {
      {"max_turns", 21, "budgets.max_turns: requested 21 is above the parent's 20"},
      {"max_model_calls", 31, "budgets.max_model_calls: requested 31 is above the calls left 30"},
      {"wall_time", "6m", "budgets.wall_time: requested 360000ms is above the time left 300000ms"},
      {"command_timeout", "61s", "budgets.command_timeout: requested 61000ms is above the parent's 60000ms"},
      {"max_output_bytes", "65537", "budgets.max_output_bytes: requested 65537 is above the parent's 65536"},
      {"max_loops", 4, "budgets.max_loops: requested 4 is above the loops left 3"},
      {"max_pending_tasks", 2, "budgets.max_pending_tasks: requested 2 is above"},
  };
  for (const auto& [key, value, want] : cases) expectRefused({{"budgets", {{key, value}}}}, want);
  expectRefused({{"budgets", {{"wall_time", "20s"}, {"command_timeout", "30s"}}}},
                "budgets.command_timeout: requested 30000ms is above the subtask's wall_time 20000ms");
}

TEST(Attenuate, BudgetValuesKeepTheirTypeAndRangeRules) {
  for (const Json& v : {Json(-1), Json::parse("1e30"), Json(1.5), Json(true), Json("10"), Json(0)})
    expectError(spawn({{"budgets", {{"max_turns", v}}}}), Errc::kInvalidArgument,
                "budgets.max_turns: must be an integer in 1..10000", v.dump());
  expectError(spawn({{"budgets", {{"wall_time", 60}}}}), Errc::kInvalidArgument, "budgets.wall_time:", "number");
  expectError(spawn({{"budgets", {{"bogus", 1}}}}), Errc::kInvalidArgument, "budgets.bogus: unknown field", "bogus");
}

TEST(Attenuate, ShorterWallTimePullsTheDefaultCommandTimeoutDown) {
  auto r = spawn({{"budgets", {{"wall_time", "10s"}}}});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->budgets.command_timeout, milliseconds(10000));
}

TEST(Attenuate, NothingLeftMeansNoSubtask) {
  Remaining l = left();
  l.model_calls = 0;
  expectError(spawn(Json::object(), l), Errc::kRefused, "no model calls are left", "calls");
  l = left();
  l.wall_time = milliseconds(0);
  expectError(spawn(Json::object(), l), Errc::kRefused, "no wall time is left", "wall");
  l.wall_time = milliseconds(-5);
  expectError(spawn(Json::object(), l), Errc::kRefused, "no wall time is left", "negative wall");
  l = left();
  l.loops = 0;
  expectError(spawn(Json::object(), l), Errc::kRefused, "no agent loops are left", "loops");
  l = left();
  l.wall_time = milliseconds(999);
  expectError(spawn(Json::object(), l), Errc::kRefused, "below the 1s minimum", "999ms");
  l = left();
  l.pending_tasks = 0;
  auto r = spawn(Json::object(), l);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->budgets.max_pending_tasks, 0u);
  expectError(spawn({{"budgets", {{"max_pending_tasks", 1}}}}, l), Errc::kRefused, "max_pending_tasks", "pending");
}

TEST(Attenuate, AGenerousRemainingNeverLiftsTheParentsOwnCeilings) {
  Remaining lots{1000000, milliseconds(48 * 3600000), 1000, 1000};
  auto r = spawn(Json::object(), lots);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->budgets.max_model_calls, 40u);
  EXPECT_EQ(r->budgets.wall_time, milliseconds(600000));
  EXPECT_EQ(r->budgets.max_loops, 4u);
  EXPECT_EQ(r->budgets.max_pending_tasks, 2u);
  expectError(spawn({{"budgets", {{"max_model_calls", 41}}}}, lots), Errc::kRefused, "above the calls left 40", "41");
}

TEST(Attenuate, InheritedFieldsCannotBeNamed) {
  for (const char* key : {"model", "sandbox", "network", "credentials", "version", "task"})
    expectRefused({{key, Json::object()}}, std::string(key) + ": a subtask inherits this from its parent");
}

TEST(Attenuate, ScopeIsParsedStrictly) {
  expectError(spawn({{"inputz", {"src/a.py"}}}), Errc::kInvalidArgument, "scope: inputz: unknown field", "typo");
  expectError(spawn({{"inputs", "src/a.py"}}), Errc::kInvalidArgument, "inputs: must be an array", "type");
  const auto raw = [](std::string_view scope) { return attenuate(parent(), left(), "t", scope); };
  expectError(raw("[]"), Errc::kInvalidArgument, "scope: $: must be a JSON object", "array");
  expectError(raw(""), Errc::kInvalidArgument, "scope: $: invalid JSON", "empty");
  expectError(raw(R"({"outputs":[],"outputs":["src/fix.py","x"]})"), Errc::kInvalidArgument,
              "scope: outputs: duplicate key", "dup");
  expectError(raw(std::string(60000, '[')), Errc::kInvalidArgument, "nested deeper", "deep");
  std::string big = R"({"inputs":[")" + std::string(kMaxScopeBytes, 'a') + R"("]})";
  expectError(raw(big), Errc::kInvalidArgument, "scope: $: larger than 65536 bytes", "big");
}

TEST(Attenuate, TaskTextIsChecked) {
  const Manifest p = parent();
  for (const std::string& task : {std::string(""), std::string("  "), std::string("\xff"),
                                  std::string(kMaxTaskBytes + 1, 'x'), std::string("a\0b", 3)})
    expectError(attenuate(p, left(), task, "{}"), Errc::kInvalidArgument, "scope: task: ", "task");
  EXPECT_TRUE(attenuate(p, left(), std::string(kMaxTaskBytes, 'x'), "{}").ok());
}

TEST(Attenuate, ChildRoundTripsAndCanOnlyNarrowFurther) {
  auto child = spawn({{"inputs", {"src/**"}}, {"outputs", {"src/fix.py"}}, {"budgets", {{"max_turns", 5}}}});
  ASSERT_TRUE(child.ok()) << child.error().message();
  auto again = parseManifest(manifestToCanonicalJson(*child));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(*again, *child);
  Remaining l{5, milliseconds(60000), 1, 1};
  auto grandchild = attenuate(*child, l, "grandchild", R"({"inputs":["src/a.py"]})");
  ASSERT_TRUE(grandchild.ok()) << grandchild.error().message();
  // What the grandparent had and the child gave up stays out of reach.
  EXPECT_FALSE(attenuate(*child, l, "g", R"({"inputs":["README.md"]})").ok());
  EXPECT_FALSE(attenuate(*child, l, "g", R"({"outputs":["out/report.txt"]})").ok());
  EXPECT_FALSE(attenuate(*child, l, "g", R"({"budgets":{"max_turns":6}})").ok());
}

}  // namespace
}  // namespace corral::policy
