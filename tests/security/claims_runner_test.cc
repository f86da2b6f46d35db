// SPDX-License-Identifier: Apache-2.0
// Claims of the manifest runner (claims/runner.toml): the manifest is frozen, every tool
// call is gated (and applied only with --apply), .corral/ is reserved, budgets hold. Each
// test plays a hostile model through the replay provider against the real binary.
#include <sys/stat.h>

#include "run_fixture.h"

namespace corral::testing {
namespace {

using nlohmann::json;

// A refusal of `rule` for the nth tool call (0-based) in the trace.
::testing::AssertionResult refusedWith(const std::vector<json>& calls, size_t n, const std::string& rule_prefix) {
  if (n >= calls.size()) return ::testing::AssertionFailure() << "only " << calls.size() << " tool calls traced";
  const json& c = calls[n];
  if (c.value("decision", "") != "refuse") return ::testing::AssertionFailure() << "call " << n << " not refused: " << c.dump();
  if (c.value("rule", "").rfind(rule_prefix, 0) != 0)
    return ::testing::AssertionFailure() << "call " << n << " refused by " << c.value("rule", "") << ", expected " << rule_prefix;
  return ::testing::AssertionSuccess();
}

// ---- runner.manifest-frozen ----

TEST(RunnerManifestFrozen, HostileManifestsAreRefusedBeforeAnythingIsWritten) {
  const std::vector<std::pair<std::string, json>> cases = {
      {"unknown field", {{"surprise", 1}}},
      {"absolute input", {{"inputs", {"/etc/passwd"}}}},
      {"dotdot output", {{"outputs", {"../escape.txt"}}}},
      {"output in .corral", {{"outputs", {".corral/trace.jsonl"}}}},
      {"executable as a path", {{"executables", {"/usr/bin/python3"}}}},
      {"negative budget", {{"budgets", {{"max_turns", -1}}}}},
      {"huge budget", {{"budgets", {{"max_model_calls", 1e30}}}}},
      {"network before the proxy", {{"network", {{"allow", {"https://example.com"}}}}}},
  };
  for (const auto& [what, patch] : cases) {
    RunFixture f;
    f.manifest.merge_patch(patch);
    f.reply({call("finish", {{"summary", "x"}})});
    RunResult r = f.run();
    EXPECT_EQ(r.exit_code, 125) << claim("runner.manifest-frozen", what + " accepted") << r.describe();
    EXPECT_NE(r.err.find("corral: run: "), std::string::npos) << what << r.describe();
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << what << ": expected one stderr line: " << r.err;
    EXPECT_FALSE(f.ws.exists(".corral")) << claim("runner.manifest-frozen", what + " left a record behind");
  }
}

TEST(RunnerManifestFrozen, ResultCommitsTheManifestBytes) {
  RunFixture f;
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::string bytes = f.ws.read("manifest.json");
  RunResult sha = corral::testing::run({"/usr/bin/sha256sum", f.ws / "manifest.json"});
  ASSERT_EQ(sha.exit_code, 0);
  EXPECT_EQ(f.result()["commitments"]["manifest_sha256"], sha.out.substr(0, 64)) << claim("runner.manifest-frozen", "manifest hash not committed");
  EXPECT_EQ(f.entries("run_start").at(0)["manifest_sha256"], sha.out.substr(0, 64));
}

TEST(RunnerManifestFrozen, ModelOutputCannotRaiseTurnsOrWidenScope) {
  RunFixture f;
  f.manifest["budgets"]["max_turns"] = 3;
  f.manifest["budgets"]["max_pending_tasks"] = 1;
  // The model asks for more turns in every way a tool call can carry a number, and tries to
  // spawn a subtask with more budget and more outputs than it has.
  f.reply({call("read", {{"path", "in.txt"}, {"max_turns", 1000}})});
  f.reply({call("spawn", {{"task", "more"}, {"scope", {{"budgets", {{"max_turns", 1000}}}}}}),
           call("spawn", {{"task", "wider"}, {"scope", {{"outputs", {"out.txt", "evil.txt"}}}}}),
           call("spawn", {{"task", "tools"}, {"scope", {{"executables", {"sh"}}}}}),
           call("set_budget", {{"max_turns", 1000}})});
  for (int i = 0; i < 8; ++i) f.reply({call("read", {{"path", "in.txt"}})});
  f.ws.write("in.txt", "hello\n");
  RunResult r = f.run();
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_EQ(f.entries("model_call").size(), 3u) << claim("runner.manifest-frozen", "max_turns exceeded");
  auto calls = f.toolCalls();
  EXPECT_TRUE(refusedWith(calls, 0, "arguments"));
  EXPECT_TRUE(refusedWith(calls, 1, "spawn.scope"));
  EXPECT_TRUE(refusedWith(calls, 2, "spawn.scope"));
  EXPECT_TRUE(refusedWith(calls, 3, "spawn.scope"));
  EXPECT_TRUE(refusedWith(calls, 4, "unknown-tool"));
  EXPECT_EQ(f.entries("task_start").size(), 1u) << claim("runner.manifest-frozen", "a widened subtask ran");
}

TEST(RunnerManifestFrozen, Control_MoreTurnsWhenTheOperatorGrantsThem) {
  RunFixture f;
  f.manifest["budgets"]["max_turns"] = 6;
  for (int i = 0; i < 8; ++i) f.reply({call("read", {{"path", "in.txt"}})});
  f.ws.write("in.txt", "hello\n");
  RunResult r = f.run();
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_EQ(f.entries("model_call").size(), 6u);
}

// ---- runner.tool-calls-gated ----

TEST(RunnerToolCallsGated, DryRunValidatesButAppliesNothing) {
  RunFixture f;
  f.ws.write("out.txt", "original\n");
  f.ws.write("make.py", "open('out.txt', 'w').write('changed by a command')\n");
  f.reply({call("write", {{"path", "out.txt"}, {"content", "changed by write"}}),
           call("run", {{"command", "python3"}, {"args", {"make.py"}}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run({});  // no --apply
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(f.ws.read("out.txt"), "original\n") << claim("runner.tool-calls-gated", "a dry run changed a file");
  auto calls = f.toolCalls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0]["decision"], "dry_run");
  EXPECT_EQ(calls[1]["decision"], "dry_run");
  EXPECT_FALSE(calls[1].contains("exit_code")) << "the command ran in a dry run";
  EXPECT_EQ(runJson(r)["commands"], 0);
}

TEST(RunnerToolCallsGated, Control_ApplyWritesAndRunsInASandbox) {
  RunFixture f;
  f.ws.write("whoami.py",
             "import os, socket\nprint(socket.gethostname(), os.getcwd(), os.getuid())\n"
             "open('out.txt', 'w').write('from the sandbox')\nopen('stray.txt', 'w').write('undeclared')\n");
  f.reply({call("run", {{"command", "python3"}, {"args", {"whoami.py"}}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(f.ws.read("out.txt"), "from the sandbox");
  EXPECT_FALSE(f.ws.exists("stray.txt")) << claim("runner.tool-calls-gated", "an undeclared file reached the host");
  auto calls = f.toolCalls();
  ASSERT_GE(calls.size(), 1u);
  EXPECT_EQ(calls[0]["decision"], "allow");
  EXPECT_EQ(calls[0]["exit_code"], 0) << calls[0].dump();
  EXPECT_GT(calls[0]["stdout_bytes"].get<int>(), 0);
}

TEST(RunnerToolCallsGated, CommandsOutsideTheAllowlistOrWithShellSyntaxAreRefused) {
  RunFixture f;
  f.reply({call("run", {{"command", "sh"}, {"args", {"-c", "id"}}}),
           call("run", {{"command", "python3"}, {"args", {"-c", "import os; os.system('id')"}}}),
           call("run", {{"command", "python3"}, {"args", {"x.py", "a|b"}}}),
           call("run", {{"command", "python3"}, {"args", {"x.py", "$(id)"}}}),
           call("run", {{"command", "python3"}, {"args", {"x.py", "line\nbreak"}}}),
           call("run", {{"command", "/usr/bin/sh"}, {"args", json::array()}}),
           call("run", {{"command", ""}, {"args", json::array()}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_EQ(calls.size(), 8u);
  for (size_t i = 0; i < 7; ++i) EXPECT_TRUE(refusedWith(calls, i, "")) << claim("runner.tool-calls-gated", "call " + std::to_string(i) + " ran");
  EXPECT_EQ(runJson(r)["commands"], 0);
}

TEST(RunnerToolCallsGated, TheModelsPathForAProgramIsDiscarded) {
  RunFixture f;
  f.ws.write("hi.py", "print('hi')\n");
  f.reply({call("run", {{"command", "/tmp/evil/python3"}, {"args", {"hi.py"}}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_GE(calls.size(), 1u);
  EXPECT_EQ(calls[0]["args"]["argv"][0], "python3") << calls[0].dump();
  EXPECT_EQ(calls[0]["exit_code"], 0) << calls[0].dump();
}

TEST(RunnerToolCallsGated, WritesOnlyToDeclaredOutputsAndReadsOnlyDeclaredFiles) {
  RunFixture f;
  f.manifest["inputs"] = {"in.txt"};
  f.ws.write("in.txt", "input\n");
  f.ws.write("secret.env", "TOKEN=do-not-read\n");
  f.reply({call("write", {{"path", "in.txt"}, {"content", "x"}}),
           call("write", {{"path", "../escape.txt"}, {"content", "x"}}),
           call("write", {{"path", "/etc/passwd"}, {"content", "x"}}),
           call("write", {{"path", ".corral/trace.jsonl"}, {"content", "x"}}),
           call("read", {{"path", "secret.env"}}),
           call("read", {{"path", "/etc/shadow"}}),
           call("read", {{"path", "./in.txt/../secret.env"}})});
  f.reply({call("read", {{"path", "in.txt"}}), call("write", {{"path", "out.txt"}, {"content", "ok"}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_EQ(calls.size(), 10u);
  for (size_t i = 0; i < 7; ++i) EXPECT_TRUE(refusedWith(calls, i, "")) << claim("runner.tool-calls-gated", "call " + std::to_string(i) + " allowed");
  EXPECT_EQ(calls[7]["decision"], "allow");
  EXPECT_EQ(calls[8]["decision"], "allow");
  EXPECT_EQ(f.ws.read("in.txt"), "input\n");
  EXPECT_EQ(f.ws.read("out.txt"), "ok");
  EXPECT_FALSE(f.ws.exists("../escape.txt"));
}

TEST(RunnerToolCallsGated, SymlinkedInputsAreNeverStagedOrFollowed) {
  RunFixture f;
  f.manifest["inputs"] = {"*.txt"};
  ASSERT_EQ(::symlink("/etc/hostname", (f.ws / "link.txt").c_str()), 0);
  f.reply({call("read", {{"path", "link.txt"}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_GE(calls.size(), 1u);
  EXPECT_FALSE(calls[0].contains("sha256")) << claim("runner.tool-calls-gated", "a symlinked input was read") << calls[0].dump();
  auto staged = f.entries("workspace_staged");
  ASSERT_EQ(staged.size(), 1u);
  EXPECT_NE(staged[0]["refused"].dump().find("link.txt: symlink"), std::string::npos) << staged[0].dump();
}

TEST(RunnerToolCallsGated, MalformedModelCallsAreRefusedAndTraced) {
  RunFixture f;
  f.reply({rawCall("read", "{not json"),
           rawCall("read", "[1,2]"),
           call("read", json::object()),
           call("write", {{"path", "out.txt"}}),
           call("run", {{"command", "python3"}, {"args", "not-an-array"}}),
           call("no_such_tool", json::object()),
           rawCall("write", "{\"path\":\"out.txt\",\"content\":\"" + std::string(10 << 20, 'a') + "\"}")});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_EQ(calls.size(), 8u);
  const char* rules[] = {"arguments.json", "arguments.shape", "arguments", "arguments", "arguments", "unknown-tool", "arguments.size"};
  for (size_t i = 0; i < 7; ++i) EXPECT_TRUE(refusedWith(calls, i, rules[i]));
  EXPECT_FALSE(f.ws.exists("out.txt"));
}

// ---- runner.audit-dir-reserved ----

TEST(RunnerAuditDirReserved, NoToolOrCommandCanWriteTheRecord) {
  RunFixture f;
  f.ws.write("tamper.py",
             "import os\nseen = os.path.exists('.corral')\nos.makedirs('.corral', exist_ok=True)\n"
             "open('.corral/trace.jsonl', 'w').write('forged')\nopen('out.txt', 'w').write(str(seen))\n");
  f.reply({call("write", {{"path", ".corral/result.json"}, {"content", "{}"}}),
           call("write", {{"path", ".corral/../.corral/trace.jsonl"}, {"content", "x"}}),
           call("run", {{"command", "python3"}, {"args", {"tamper.py"}}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  EXPECT_TRUE(refusedWith(calls, 0, "path"));
  EXPECT_TRUE(refusedWith(calls, 1, "path"));
  // The command ran, saw no .corral in its workspace, and its forged record stayed inside.
  EXPECT_EQ(f.ws.read("out.txt"), "False");
  RunResult v = corral::testing::run({corralBin(), "verify", f.ws.path()});
  EXPECT_EQ(v.exit_code, 0) << claim("runner.audit-dir-reserved", "the record was damaged") << v.describe();
}

TEST(RunnerAuditDirReserved, Control_VerifyNoticesAForgedTrace) {
  RunFixture f;
  f.reply({call("finish", {{"summary", "done"}})});
  ASSERT_EQ(f.run().exit_code, 0);
  std::string t = f.ws.read(".corral/trace.jsonl");
  f.ws.write(".corral/trace.jsonl", t.substr(0, t.size() / 2));
  EXPECT_NE(corral::testing::run({corralBin(), "verify", f.ws.path()}).exit_code, 0);
}

// ---- runner.budgets-enforced ----

TEST(RunnerBudgetsEnforced, ModelCallsIncludingRetriesStopAtTheLimit) {
  RunFixture f;
  f.manifest["budgets"]["max_model_calls"] = 4;
  f.manifest["model"]["max_retries"] = 10;
  for (int i = 0; i < 10; ++i) f.replies.push_back({{"error", {{"kind", "transient"}}}});
  RunResult r = f.run();
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_EQ(f.entries("model_call").size(), 4u) << claim("runner.budgets-enforced", "retries not counted");
  auto b = f.entries("budget_exhausted");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0]["budget"], "max_model_calls");
}

TEST(RunnerBudgetsEnforced, CommandTimeoutAndOutputCap) {
  RunFixture f;
  f.manifest["budgets"]["command_timeout"] = "1s";
  f.manifest["budgets"]["max_output_bytes"] = 1000;
  f.ws.write("spin.py", "import time\nwhile True: time.sleep(1)\n");
  f.ws.write("loud.py", "import sys\nsys.stdout.write('x' * 5000000)\n");
  f.reply({call("run", {{"command", "python3"}, {"args", {"spin.py"}}}),
           call("run", {{"command", "python3"}, {"args", {"loud.py"}}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_GE(calls.size(), 2u);
  EXPECT_EQ(calls[0]["killed_by"], "timeout") << claim("runner.budgets-enforced", "command_timeout") << calls[0].dump();
  EXPECT_EQ(calls[1]["stdout_bytes"], 5000000);
  EXPECT_EQ(calls[1]["stdout_truncated"], true);
}

TEST(RunnerBudgetsEnforced, LoopsAndPendingTasksAreCapped) {
  RunFixture f;
  f.manifest["budgets"]["max_loops"] = 2;
  f.manifest["budgets"]["max_pending_tasks"] = 2;
  f.reply({call("spawn", {{"task", "sub one"}}), call("spawn", {{"task", "sub two"}})});
  f.reply({call("finish", {{"summary", "root done"}})});
  f.reply({call("finish", {{"summary", "sub done"}})});
  f.reply({call("finish", {{"summary", "never"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_GE(calls.size(), 2u);
  EXPECT_EQ(calls[0]["decision"], "allow");
  EXPECT_TRUE(refusedWith(calls, 1, "budget.max_loops")) << claim("runner.budgets-enforced", "max_loops inert");
  EXPECT_EQ(f.entries("task_start").size(), 2u);
}

TEST(RunnerBudgetsEnforced, PendingTasksCappedBelowLoops) {
  RunFixture f;
  f.manifest["budgets"]["max_loops"] = 10;
  f.manifest["budgets"]["max_pending_tasks"] = 1;
  f.reply({call("spawn", {{"task", "a"}}), call("spawn", {{"task", "b"}})});
  f.reply({call("finish", {{"summary", "root"}})});
  f.reply({call("finish", {{"summary", "a"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  EXPECT_EQ(calls.at(0)["decision"], "allow");
  EXPECT_TRUE(refusedWith(calls, 1, "budget.max_pending_tasks")) << claim("runner.budgets-enforced", "max_pending_tasks inert");
}

}  // namespace
}  // namespace corral::testing
