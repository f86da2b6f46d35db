// SPDX-License-Identifier: Apache-2.0
// Claims of the manifest runner (claims/runner.toml): the manifest is frozen, every tool
// call is gated (and applied only with --apply), .corral/ is reserved, budgets hold. Each
// test plays a hostile model through the replay provider against the real binary.
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <cstring>

#include "run_fixture.h"

namespace corral::testing {
namespace {

using nlohmann::json;

// SHA-256 (hex) of bytes, by the host's sha256sum: the tests check corral's hashes with
// another implementation.
std::string sha256Hex(const std::string& bytes) {
  TempDir d("sha");
  d.write("x", bytes);
  const RunResult r = corral::testing::run({"/usr/bin/sha256sum", d / "x"});
  return r.out.substr(0, 64);
}

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
      {"grant with a path", {{"network", {{"allow", {"https://example.com/x"}}}}}},
      {"grant with userinfo", {{"network", {{"allow", {"https://u:p@example.com"}}}}}},
      {"proxy variable in env", {{"env", {"HTTPS_PROXY=http://evil:1"}}}},
      {"credential with a wildcard", {{"credentials", {{{"name", "a"}, {"env", "A_TOKEN"}, {"url", "https://*.example.com"}}}}}},
      {"credential header owned by the proxy",
       {{"credentials", {{{"name", "a"}, {"env", "A_TOKEN"}, {"url", "https://example.com"}, {"header", "Host"}}}}}},
      {"credential variable set by corral", {{"credentials", {{{"name", "a"}, {"env", "PATH"}, {"url", "https://example.com"}}}}}},
      {"credential secret missing", {{"credentials", {{{"name", "a"}, {"env", "CORRAL_TEST_UNSET_TOKEN"}, {"url", "https://example.com"}}}}}},
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

std::string sha256Of(const TempDir& dir, const std::string& bytes) {
  dir.write("hash-me.bin", bytes);
  RunResult h = corral::testing::run({"/usr/bin/sha256sum", dir / "hash-me.bin"});
  ::unlink((dir / "hash-me.bin").c_str());
  return h.out.substr(0, 64);
}

// The workspace (and the .corral/ in it) arrives from outside. Files laid out in advance at
// the names the run writes through (a hard link or FIFO at a temp name, a blob with other
// bytes than its name says) must neither redirect a write to a host file nor stand in the
// record, and a dry run must change nothing but the record.
TEST(RunnerToolCallsGated, ARecordDirectoryLaidOutInAdvanceNeverRedirectsTheRunsWrites) {
  RunFixture f;
  TempDir scratch("hashes");
  f.ws.write("victim.txt", "precious\n");
  const std::string task = f.manifest["task"].get<std::string>();
  const std::string content = "changed by write";
  const std::string task_hash = sha256Of(scratch, task), content_hash = sha256Of(scratch, content),
                    summary_hash = sha256Of(scratch, "done");
  ASSERT_EQ(task_hash.size(), 64u);
  ASSERT_EQ(::mkdir((f.ws / ".corral").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((f.ws / ".corral/blobs").c_str(), 0755), 0);
  // The temp names the store used: ".<hash>.tmp".
  ASSERT_EQ(::link((f.ws / "victim.txt").c_str(), (f.ws / (".corral/blobs/." + task_hash + ".tmp")).c_str()), 0);
  ASSERT_EQ(::mkfifo((f.ws / (".corral/blobs/." + summary_hash + ".tmp")).c_str(), 0644), 0);
  f.ws.write(".corral/blobs/" + content_hash, "forged: not what the model sent");
  f.reply({call("write", {{"path", "out.txt"}, {"content", content}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunOptions o;
  o.deadline = std::chrono::seconds(20);
  RunResult r = f.run({"--trace-content", "full"}, o);  // a dry run
  ASSERT_FALSE(r.deadline_hit) << claim("runner.tool-calls-gated", "a FIFO in the record directory hung the run");
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(f.ws.read("victim.txt"), "precious\n")
      << claim("runner.tool-calls-gated", "a dry run wrote a host file through a hard link in .corral/blobs");
  EXPECT_FALSE(f.ws.exists("out.txt"));
  EXPECT_EQ(f.ws.read(".corral/blobs/" + task_hash), task);
  EXPECT_EQ(f.ws.read(".corral/blobs/" + summary_hash), "done");
  EXPECT_EQ(f.ws.read(".corral/blobs/" + content_hash), content)
      << claim("runner.tool-calls-gated", "a planted blob stood as what the model sent");
}

// A directory laid out where the record is sealed (result.json, a blob's name) cannot be
// replaced by rename(2): the run must refuse before it applies anything, not stop unsealed
// after the outputs reached the host.
TEST(RunnerToolCallsGated, ARecordThatCouldNotBeSealedIsRefusedBeforeAnythingIsApplied) {
  TempDir scratch("hashes");
  for (int variant = 0; variant < 2; ++variant) {
    SCOPED_TRACE(variant == 0 ? "result.json" : "blob");
    RunFixture f;
    f.ws.write("out.txt", "original\n");
    f.reply({call("write", {{"path", "out.txt"}, {"content", "changed"}})});
    f.reply({call("finish", {{"summary", "done"}})});
    ASSERT_EQ(::mkdir((f.ws / ".corral").c_str(), 0755), 0);
    std::vector<std::string> flags = {"--apply"};
    if (variant == 0) {
      ASSERT_EQ(::mkdir((f.ws / ".corral/result.json").c_str(), 0755), 0);
      f.ws.write(".corral/result.json/keep", "x");
    } else {
      ASSERT_EQ(::mkdir((f.ws / ".corral/blobs").c_str(), 0755), 0);
      const std::string blob = ".corral/blobs/" + sha256Of(scratch, "changed");
      ASSERT_EQ(::mkdir((f.ws / blob).c_str(), 0755), 0);
      f.ws.write(blob + "/keep", "x");
      flags.insert(flags.end(), {"--trace-content", "full"});
    }
    RunResult r = f.run(flags);
    EXPECT_EQ(r.exit_code, 125) << r.describe();
    EXPECT_EQ(f.ws.read("out.txt"), "original\n")
        << claim("runner.tool-calls-gated", "outputs were applied by a run that could not seal its record");
    EXPECT_TRUE(f.entries("model_call").empty()) << "the run went ahead";
  }
}

// A spawned task that narrowed its inputs saw, in its commands, everything the run staged:
// its read tool refused secret.txt while `python3 list.py` printed it.
TEST(RunnerToolCallsGated, ASpawnedTaskSeesInItsCommandsOnlyWhatItDeclares) {
  RunFixture f;
  f.manifest["outputs"] = {"out.txt", "report.txt"};
  f.ws.write("a.txt", "public\n");
  f.ws.write("secret.txt", "SENTINEL_PARENT_ONLY\n");
  f.ws.write("list.py",
             "import os\nnames = sorted(os.listdir('/workspace'))\n"
             "try:\n    leaked = open('/workspace/secret.txt').read()\nexcept OSError:\n    leaked = 'none'\n"
             "open('report.txt', 'w').write(repr(names) + ' ' + leaked)\n");
  const json scope = {{"inputs", {"a.txt", "list.py"}}, {"outputs", {"report.txt"}}};
  f.reply({call("spawn", {{"task", "list"}, {"scope", scope}})});
  f.reply({call("finish", {{"summary", "root"}})});
  f.reply({call("read", {{"path", "secret.txt"}}), call("run", {{"command", "python3"}, {"args", {"list.py"}}})});
  f.reply({call("finish", {{"summary", "child"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_GE(calls.size(), 4u);
  EXPECT_TRUE(refusedWith(calls, 2, "not-declared")) << "the child's read tool";
  EXPECT_EQ(f.ws.read("report.txt"), "['a.txt', 'list.py'] none")
      << claim("runner.tool-calls-gated", "a spawned task's command saw files outside its declared inputs");
  EXPECT_EQ(f.ws.read("report.txt").find("SENTINEL_PARENT_ONLY"), std::string::npos);
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

// Staging enters only directories a declared input or output could lie below, and a file
// name that is not UTF-8 (which no tool argument or trace entry can carry) is refused, not a
// crash that leaves the record unsealed.
TEST(RunnerToolCallsGated, StagingRefusesNonUtf8NamesAndSkipsUnrelatedTrees) {
  RunFixture f;
  f.manifest["inputs"] = {"in/*"};
  ::mkdir((f.ws / "in").c_str(), 0755);
  f.ws.write("in/good.txt", "g");
  f.ws.write("in/bad\xff", "b");
  std::string deep = "node_modules";
  for (int i = 0; i < 80; ++i) deep += "/d";  // deeper than staging's nesting limit
  ASSERT_EQ(corral::testing::run({"/bin/mkdir", "-p", f.ws / deep}).exit_code, 0);
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto staged = f.entries("workspace_staged");
  ASSERT_EQ(staged.size(), 1u) << r.describe();
  EXPECT_EQ(staged[0]["files"], 1) << staged[0].dump();
  ASSERT_EQ(staged[0]["refused"].size(), 1u) << staged[0].dump();
  EXPECT_TRUE(f.ws.exists(".corral/result.json")) << "the record was not sealed";
}

TEST(RunnerToolCallsGated, MalformedModelCallsAreRefusedAndTraced) {
  RunFixture f;
  f.reply({rawCall("read", "{not json"),
           rawCall("read", "[1,2]"),
           call("read", json::object()),
           call("write", {{"path", "out.txt"}}),
           call("run", {{"command", "python3"}, {"args", "not-an-array"}}),
           call("no_such_tool", json::object()),
           rawCall("write", "{\"path\":\"out.txt\",\"content\":\"" + std::string(10 << 20, 'a') + "\"}"),
           // A duplicate key: which one "wins" is a JSON library's choice, so neither does.
           rawCall("write", "{\"path\":\"out.txt\",\"content\":\"a\",\"path\":\"out.txt\"}")});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_EQ(calls.size(), 9u);
  const char* rules[] = {"arguments.json", "arguments.shape", "arguments", "arguments", "arguments", "unknown-tool", "arguments.size",
                         "arguments.json"};
  for (size_t i = 0; i < 8; ++i) EXPECT_TRUE(refusedWith(calls, i, rules[i])) << i;
  EXPECT_FALSE(f.ws.exists("out.txt"));
}

// wall_time bounds the whole run: commands get at most what is left of it, calls in the
// same reply are refused once it is spent, and the next turn ends the task (exit 2).
TEST(RunnerBudgetsEnforced, WallTimeBoundsCommandsAndEndsTheRun) {
  RunFixture f;
  f.manifest["budgets"]["wall_time"] = "2s";
  f.manifest["budgets"]["command_timeout"] = "2s";
  f.ws.write("sleep.py", "import time\ntime.sleep(30)\n");
  std::vector<json> calls;
  for (int i = 0; i < 4; ++i) calls.push_back(call("run", {{"command", "python3"}, {"args", {"sleep.py"}}}));
  f.reply(calls);
  for (int i = 0; i < 5; ++i) f.reply({call("mailbox_read", json::object())});
  f.reply({call("finish", {{"summary", "done"}})});
  const auto t0 = std::chrono::steady_clock::now();
  RunResult r = f.run();
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_LT(took, std::chrono::seconds(20)) << claim("runner.budgets-enforced", "commands outlasted wall_time");
  auto traced = f.toolCalls();
  ASSERT_GE(traced.size(), 2u);
  int64_t total_timeout = 0;
  for (const json& c : traced)
    if (c.contains("timeout_ms")) total_timeout += c["timeout_ms"].get<int64_t>();
  EXPECT_LE(total_timeout, 2000) << claim("runner.budgets-enforced", "command timeouts add up past wall_time");
  EXPECT_TRUE(refusedWith(traced, traced.size() - 1, "budget.wall_time"));
  auto b = f.entries("budget_exhausted");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0]["budget"], "wall_time");
  EXPECT_EQ(f.entries("model_call").size(), 1u) << "a turn was taken after wall_time ran out";
}

// A reply is a model's to shape: 5,000 tool calls in one reply cost what 17 do. The first 16
// are handled, the rest go in one traced entry, and the next request carries only the 16.
TEST(RunnerBudgetsEnforced, AFloodOfToolCallsInOneReplyIsCutToTheLimit) {
  RunFixture f;
  std::vector<json> flood;
  for (int i = 0; i < 5000; ++i) flood.push_back(call("mailbox_read", json::object()));
  f.reply(flood);
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run({});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(f.toolCalls().size(), 17u) << claim("runner.budgets-enforced", "every call of a flood was handled or traced");
  auto dropped = f.entries("tool_calls_dropped");
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0]["dropped"], 5000 - 16);
  EXPECT_EQ(dropped[0]["rule"], "too-many-calls");
  auto calls = f.entries("model_call");
  ASSERT_EQ(calls.size(), 2u);
  // system, user, assistant, 16 tool results: nothing of the dropped calls went back.
  EXPECT_EQ(calls[1]["request_messages"], 19);
  EXPECT_LT(f.ws.read(".corral/trace.jsonl").size(), 64u * 1024) << "the trace grew with the flood";
  EXPECT_EQ(corral::testing::run({corralBin(), "verify", f.ws.path()}).exit_code, 0);
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

// A read past max_output_bytes is a refusal with its rule, counted as one; at the cap it is
// allowed (it was traced "allow" with an error, and the counters said no refusal).
TEST(RunnerBudgetsEnforced, AReadOverTheOutputCapIsARefusal) {
  RunFixture f;
  f.manifest["budgets"]["max_output_bytes"] = 10;
  f.ws.write("ten.txt", "0123456789");
  f.ws.write("eleven.txt", "0123456789A");
  f.reply({call("read", {{"path", "ten.txt"}}), call("read", {{"path", "eleven.txt"}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_GE(calls.size(), 2u);
  EXPECT_EQ(calls[0]["decision"], "allow") << calls[0].dump();
  EXPECT_TRUE(refusedWith(calls, 1, "budget.max_output_bytes")) << claim("runner.budgets-enforced", "max_output_bytes on read");
  const auto end = f.entries("run_end");
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(end[0]["refusals"], 1) << end[0].dump();
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

namespace corral::testing {
namespace {

using nlohmann::json;

// ---- runner.tool-calls-gated: git, the host without namespaces ----

TEST(RunnerToolCallsGated, GitRunsOnlyLocalSubcommandsWithoutConfiguredPrograms) {
  if (::access("/usr/bin/git", X_OK) != 0) GTEST_SKIP() << "git not installed";
  RunFixture f;
  f.manifest["executables"] = {"git"};
  f.manifest["inputs"] = {".git/**", "*.txt"};
  f.ws.write("a.txt", "hello\n");
  // A repository made by the operator: each sandbox sees it staged (the run's private
  // workspace persists between commands, but never reaches the host; docs/run.md).
  const RunOptions git_env{.env_extra = {"GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
                                         "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}};
  ASSERT_EQ(corral::testing::run({"/usr/bin/git", "-C", f.ws.path(), "init", "-q"}, git_env).exit_code, 0);
  ASSERT_EQ(corral::testing::run({"/usr/bin/git", "-C", f.ws.path(), "add", "a.txt"}, git_env).exit_code, 0);
  ASSERT_EQ(corral::testing::run({"/usr/bin/git", "-C", f.ws.path(), "commit", "-qm", "first"}, git_env).exit_code, 0);
  f.reply({call("run", {{"command", "git"}, {"args", {"log", "--oneline"}}}),
           call("run", {{"command", "git"}, {"args", {"status", "--short"}}}),
           call("run", {{"command", "git"}, {"args", {"-c", "core.pager=id", "log"}}}),
           call("run", {{"command", "git"}, {"args", {"--exec-path=/tmp", "status"}}}),
           call("run", {{"command", "git"}, {"args", {"fetch", "origin"}}}),
           call("run", {{"command", "git"}, {"args", {"config", "user.name", "x"}}}),
           call("run", {{"command", "git"}, {"args", {"diff", "--ext-diff"}}}),
           call("run", {{"command", "git"}, {"args", {"log", "--output=out.txt"}}}),
           call("run", {{"command", "git"}, {"args", {"grep", "-Oid", "hello"}}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_EQ(calls.size(), 10u);
  EXPECT_EQ(calls[0]["exit_code"], 0) << calls[0].dump();
  EXPECT_EQ(calls[1]["exit_code"], 0) << calls[1].dump();
  for (size_t i = 2; i < 9; ++i) EXPECT_TRUE(refusedWith(calls, i, "git.")) << claim("runner.tool-calls-gated", "git vector " + std::to_string(i));
}

TEST(RunnerToolCallsGated, GitRefusedInARepositoryWhoseConfigRunsPrograms) {
  if (::access("/usr/bin/git", X_OK) != 0) GTEST_SKIP() << "git not installed";
  RunFixture f;
  f.manifest["executables"] = {"git"};
  f.manifest["inputs"] = {".git/**", "*.txt"};
  ASSERT_EQ(corral::testing::run({"/usr/bin/git", "init", "-q", f.ws.path()}).exit_code, 0);
  f.ws.write(".git/config", "[core]\n\trepositoryformatversion = 0\n[alias]\n\tx = !touch pwned\n[filter \"f\"]\n\tclean = touch pwned\n");
  f.ws.write("a.txt", "hello\n");
  f.reply({call("run", {{"command", "git"}, {"args", {"status"}}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(refusedWith(f.toolCalls(), 0, "git.config")) << claim("runner.tool-calls-gated", "git ran with a hostile config");
}

// A workspace laid out as a bare repository (HEAD, objects/, refs/, config at the root, no
// .git): git's own discovery would use it, and its config is not .git/config, the file the
// runner checks. diff.external there would run a program that appends to a declared output.
TEST(RunnerToolCallsGated, GitNeverUsesABareRepositoryAtTheWorkspaceRoot) {
  if (::access("/usr/bin/git", X_OK) != 0) GTEST_SKIP() << "git not installed";
  RunFixture f;
  f.manifest["executables"] = {"git"};
  f.manifest["inputs"] = {"**"};
  f.manifest["outputs"] = {"a.txt"};
  f.ws.write("HEAD", "ref: refs/heads/main\n");
  f.ws.write("objects/info/keep", "");
  f.ws.write("refs/heads/keep", "");
  f.ws.write("config", "[diff]\n\texternal = \"echo PWNED-EXTDIFF; echo owned >> /workspace/a.txt; true\"\n");
  f.ws.write("a.txt", "a\n");
  f.ws.write("b.txt", "b\n");
  f.reply({call("run", {{"command", "git"}, {"args", {"diff", "--no-index", "a.txt", "b.txt"}}}),
           call("run", {{"command", "git"}, {"args", {"log"}}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run({"--apply", "--trace-content", "full"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_GE(calls.size(), 2u);
  EXPECT_EQ(calls[0]["decision"], "allow") << calls[0].dump();
  EXPECT_EQ(f.ws.read("a.txt"), "a\n") << claim("runner.tool-calls-gated", "git ran the root config's diff.external");
  EXPECT_EQ(f.allRecordBytes().find("PWNED-EXTDIFF"), std::string::npos)
      << claim("runner.tool-calls-gated", "git ran the root config's diff.external");
}

// The manifest's environment applies to every command, but git starts from a clean one plus
// the gate's pins: GIT_CONFIG_COUNT/KEY/VALUE would add config the gate never checked.
TEST(RunnerToolCallsGated, GitNeverSeesTheManifestsGitVariables) {
  if (::access("/usr/bin/git", X_OK) != 0) GTEST_SKIP() << "git not installed";
  RunFixture f;
  f.manifest["executables"] = {"git"};
  f.manifest["inputs"] = {"*.txt"};
  f.manifest["outputs"] = {"a.txt"};
  f.manifest["env"] = {"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=diff.external",
                       "GIT_CONFIG_VALUE_0=echo owned >> /workspace/a.txt; true", "GIT_AUTHOR_NAME=operator"};
  f.ws.write("a.txt", "a\n");
  f.ws.write("b.txt", "b\n");
  f.reply({call("run", {{"command", "git"}, {"args", {"diff", "--no-index", "a.txt", "b.txt"}}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run({"--apply"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_GE(calls.size(), 1u);
  EXPECT_EQ(calls[0]["decision"], "allow") << calls[0].dump();
  EXPECT_EQ(f.ws.read("a.txt"), "a\n") << claim("runner.tool-calls-gated", "git ran diff.external from the manifest's GIT_CONFIG_*");
}

TEST(RunnerToolCallsGated, WithoutNamespacesDryRunsWorkAndAppliedCommandsAreRefused) {
  // A user namespace whose max_user_namespaces is 0: corral inside it cannot build a sandbox.
  RunFixture f;
  f.ws.write("hi.py", "print('hi')\n");
  f.reply({call("read", {{"path", "hi.py"}}), call("write", {{"path", "out.txt"}, {"content", "x"}}),
           call("run", {{"command", "python3"}, {"args", {"hi.py"}}})});
  f.reply({call("finish", {{"summary", "done"}})});
  f.writeFiles();
  const std::string cmd = "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" run \"$1\" --apply --json";
  RunResult r = corral::testing::run({"/usr/bin/unshare", "--user", "--map-root-user", "/bin/sh", "-c", cmd, corralBin(),
                                      f.ws / "manifest.json"});
  if (r.err.find("unshare failed") != std::string::npos) GTEST_SKIP() << "cannot create a user namespace here";
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0]["decision"], "allow");
  EXPECT_EQ(calls[1]["decision"], "allow");
  EXPECT_TRUE(refusedWith(calls, 2, "sandbox-unavailable")) << claim("runner.tool-calls-gated", "an applied run without namespaces");
  EXPECT_NE(calls[2]["reason"].get<std::string>().find("user namespaces"), std::string::npos) << calls[2].dump();
  EXPECT_EQ(f.ws.read("out.txt"), "x");
}

// The host copy of a declared output is hashed before copy-back (to report "changed"). A
// FIFO there, or one reached through a symlinked directory, must neither hang the run nor be
// opened: the old code opened it blocking, following the directory link.
TEST(RunnerToolCallsGated, AHostileHostOutputNeitherHangsTheRunNorIsReachedThroughASymlink) {
  RunFixture f;
  TempDir outside("outside");
  f.manifest["outputs"] = {"out.txt", "sub/f"};
  f.ws.write("out.txt", "operator's");  // a regular file: copy-back may replace it, but not alone
  ASSERT_EQ(::mkfifo((outside / "f").c_str(), 0644), 0);
  ASSERT_EQ(::symlink(outside.path().c_str(), (f.ws / "sub").c_str()), 0);
  f.reply({call("write", {{"path", "out.txt"}, {"content", "x"}}), call("write", {{"path", "sub/f"}, {"content", "y"}}),
           call("finish", {{"summary", "done"}})});
  RunOptions o;
  o.deadline = std::chrono::milliseconds(30'000);
  RunResult r = f.run({"--apply"}, o);
  ASSERT_FALSE(r.deadline_hit) << claim("runner.tool-calls-gated", "the run hung on a FIFO in the host workspace");
  EXPECT_TRUE(f.ws.exists(".corral/result.json")) << r.describe();
  EXPECT_EQ(r.exit_code, 1) << "sub/f was refused at copy-back: the run must not exit 0" << r.describe();
  struct stat st {};
  ASSERT_EQ(::lstat((outside / "f").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << claim("runner.tool-calls-gated", "a file outside the workspace was replaced");
  // Outputs are copied all or none: out.txt is withheld beside the refused sub/f.
  EXPECT_EQ(f.ws.read("out.txt"), "operator's") << "out.txt was copied although sub/f was refused";
  const nlohmann::json outs = nlohmann::json::parse(f.ws.read(".corral/result.json"))["body"]["outputs"];
  EXPECT_EQ(outs[0].value("applied", ""), "withheld") << outs.dump();
  EXPECT_EQ(outs[1].value("applied", ""), "refused") << outs.dump();

  // The operator's FIFO at a declared output: refused on its own account (anything but a
  // regular file at the host path is), never opened, so never written into, and kept.
  RunFixture g;
  g.manifest["outputs"] = {"out.txt"};
  ASSERT_EQ(::mkfifo((g.ws / "out.txt").c_str(), 0644), 0);
  g.reply({call("write", {{"path", "out.txt"}, {"content", "x"}}), call("finish", {{"summary", "done"}})});
  RunResult alone = g.run({"--apply"}, o);
  ASSERT_FALSE(alone.deadline_hit) << claim("runner.tool-calls-gated", "the run hung on a FIFO in the host workspace");
  EXPECT_EQ(alone.exit_code, 1) << alone.describe();
  ASSERT_EQ(::lstat((g.ws / "out.txt").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << claim("runner.tool-calls-gated", "the operator's FIFO was replaced");
  const json alone_outs = g.result()["body"]["outputs"];
  ASSERT_EQ(alone_outs.size(), 1u) << alone_outs.dump();
  EXPECT_EQ(alone_outs[0].value("applied", ""), "refused") << alone_outs.dump();
}

// A declared output the operator made a symlink (to another host file), or whose parent is a
// symlinked directory: refused at copy-back with its reason, reported `refused`, never
// followed and never replaced (before issue #19 the leaf case was replaced and reported copied).
TEST(RunnerToolCallsGated, AHostSymlinkAtADeclaredOutputIsRefusedAndKept) {
  for (const char* output : {"out.txt", "d/out.txt"}) {
    SCOPED_TRACE(output);
    RunFixture f;
    TempDir outside("outside");
    outside.write("out.txt", "host-secret");
    const bool parent = std::string(output) == "d/out.txt";
    f.manifest["outputs"] = {output};
    if (parent) ASSERT_EQ(::symlink(outside.path().c_str(), (f.ws / "d").c_str()), 0);
    else ASSERT_EQ(::symlink((outside / "out.txt").c_str(), (f.ws / "out.txt").c_str()), 0);
    f.reply({call("write", {{"path", output}, {"content", "pwned"}}), call("finish", {{"summary", "done"}})});
    RunResult r = f.run();
    EXPECT_EQ(r.exit_code, 1) << "a refused output must fail the run" << r.describe();
    const json outs = f.result()["body"]["outputs"];
    ASSERT_EQ(outs.size(), 1u) << outs.dump();
    EXPECT_EQ(outs[0].value("applied", ""), "refused") << claim("runner.tool-calls-gated", "a host symlink at an output was not refused") << outs.dump();
    bool said = false;
    for (const json& e : f.entries("output")) said = said || e.value("reason", "").find("symlink") != std::string::npos;
    EXPECT_TRUE(said) << "the trace's output entry must say why";
    struct stat st {};
    ASSERT_EQ(::lstat((parent ? f.ws / "d" : f.ws / "out.txt").c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode)) << claim("runner.tool-calls-gated", "the operator's symlink was replaced");
    EXPECT_EQ(outside.read("out.txt"), "host-secret") << claim("runner.tool-calls-gated", "copy-back wrote through a host symlink");
  }
}

// Commands run as an argument vector with no shell: a program the manifest marks literal_args
// gets its arguments byte for byte, metacharacters, quotes, newlines and all.
TEST(RunnerToolCallsGated, AMarkedProgramGetsItsArgumentsExactly) {
  RunFixture f;
  f.manifest["executables"] = {{{"name", "python3"}, {"literal_args", true}}};
  f.ws.write("argv.py", "import sys, json\nopen('out.txt', 'w').write(json.dumps(sys.argv[1:]))\n");
  const std::vector<std::string> args = {"print(6*7)", "a;b|c&d", "$(id) `id`", "*.py ?", "'\"\\", "{x}[y]<z>!#~",
                                         "two\nlines\tand tab", "caf\xc3\xa9"};
  json with_script = json::array({"argv.py"});
  for (const std::string& a : args) with_script.push_back(a);
  f.reply({call("run", {{"command", "python3"}, {"args", with_script}}),
           call("run", {{"command", "python3"}, {"args", {"-c", "print(6*7)"}}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_GE(calls.size(), 2u);
  EXPECT_EQ(calls[0].value("decision", ""), "allow") << calls[0].dump();
  EXPECT_EQ(calls[0].value("rule", ""), "allowlist.literal_args") << calls[0].dump();
  EXPECT_EQ(json::parse(f.ws.read("out.txt"), nullptr, false), json(args)) << "the program did not get the bytes given";
  EXPECT_EQ(calls[1].value("stdout_sha256", ""), sha256Hex("42\n")) << calls[1].dump();
}

TEST(RunnerToolCallsGated, UnmarkedProgramsAreStillRefusedAndTheRefusalSaysHowToOptIn) {
  RunFixture f;  // python3 listed as a plain name
  f.reply({call("run", {{"command", "python3"}, {"args", {"-c", "print(6*7)"}}}), call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_TRUE(refusedWith(calls, 0, "metachar")) << claim("runner.tool-calls-gated", "an unmarked program got a metacharacter");
  EXPECT_NE(calls[0].value("reason", "").find("\"literal_args\": true"), std::string::npos) << calls[0].dump();
  EXPECT_EQ(runJson(r)["commands"], 0);
  // The refused call is named in the trace: tool, rule and the hash of its canonical arguments.
  EXPECT_EQ(calls[0].value("tool", ""), "run");
  EXPECT_EQ(calls[0].value("args_canonical_sha256", ""), sha256Hex(R"j({"args":["-c","print(6*7)"],"command":"python3"})j"))
      << calls[0].dump();
}

// ---- runner.workspace-persists-privately ----

// What one command writes, the next command and read see; none of it reaches the host but
// the declared outputs.
TEST(RunnerWorkspacePersistsPrivately, AFileOneCommandWritesTheNextSeesAndTheHostNever) {
  RunFixture f;
  f.ws.write("step1.py", "import os\nos.makedirs('build', exist_ok=True)\nopen('scratch.txt', 'w').write('SCRATCH-7f3a')\n"
                         "open('build/obj.bin', 'w').write('obj')\nopen('gone.txt', 'w').write('x')\n");
  f.ws.write("step2.py", "import os\nseen = open('scratch.txt').read() + ' ' + open('build/obj.bin').read()\n"
                         "os.remove('gone.txt')\nopen('out.txt', 'w').write('seen ' + seen)\n");
  f.ws.write("step3.py", "import os\nopen('out.txt', 'a').write(' gone' if not os.path.exists('gone.txt') else ' still')\n");
  f.reply({call("run", {{"command", "python3"}, {"args", {"step1.py"}}}),
           call("run", {{"command", "python3"}, {"args", {"step2.py"}}}),
           call("run", {{"command", "python3"}, {"args", {"step3.py"}}}), call("read", {{"path", "scratch.txt"}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(f.ws.read("out.txt"), "seen SCRATCH-7f3a obj gone")
      << claim("runner.workspace-persists-privately", "a later command did not see what an earlier one left") << r.describe();
  auto calls = f.toolCalls();
  ASSERT_GE(calls.size(), 4u);
  EXPECT_EQ(calls[3].value("decision", ""), "allow") << calls[3].dump();
  EXPECT_EQ(calls[3].value("sha256", ""), sha256Hex("SCRATCH-7f3a")) << "read must see the command's file" << calls[3].dump();
  EXPECT_GE(calls[0]["workspace_kept"].value("files", 0), 3) << calls[0].dump();
  for (const char* never : {"scratch.txt", "build", "gone.txt"})
    EXPECT_FALSE(f.ws.exists(never)) << claim("runner.workspace-persists-privately", std::string(never) + " reached the host");
  EXPECT_EQ(f.allRecordBytes().find("SCRATCH-7f3a"), std::string::npos) << "a command's file content reached the record";
}

TEST(RunnerWorkspacePersistsPrivately, GitInitThenGitAddInTwoCommands) {
  if (::access("/usr/bin/git", X_OK) != 0) GTEST_SKIP() << "git not installed";
  RunFixture f;
  f.manifest["executables"] = {"git", "python3"};
  f.ws.write("a.txt", "hello\n");
  f.ws.write("check.py", "data = open('.git/index', 'rb').read()\nopen('out.txt', 'w').write('staged' if b'a.txt' in data else 'not')\n");
  f.reply({call("run", {{"command", "git"}, {"args", {"init", "-q"}}}), call("run", {{"command", "git"}, {"args", {"add", "a.txt"}}}),
           call("run", {{"command", "python3"}, {"args", {"check.py"}}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_GE(calls.size(), 3u);
  EXPECT_EQ(calls[1].value("exit_code", -1), 0) << "git add after git init failed" << calls[1].dump();
  EXPECT_EQ(f.ws.read("out.txt"), "staged") << claim("runner.workspace-persists-privately", "git add did not see git init's repository");
  EXPECT_FALSE(f.ws.exists(".git")) << claim("runner.workspace-persists-privately", "the run's repository reached the host");
}

// Control: a spawned task keeps its narrowed view. Its files outside what it declares vanish
// with its sandbox, so the same two steps fail there, which shows the check above can fail.
TEST(RunnerWorkspacePersistsPrivately, Control_ASpawnedTasksUndeclaredFilesDoNotPersist) {
  RunFixture f;
  f.ws.write("step1.py", "open('scratch.txt', 'w').write('SCRATCH')\n");
  f.ws.write("step2.py", "import os\nopen('out.txt', 'w').write(open('scratch.txt').read() if os.path.exists('scratch.txt') else 'none')\n");
  const json scope = {{"inputs", {"*.py"}}, {"outputs", {"out.txt"}}};
  f.reply({call("spawn", {{"task", "steps"}, {"scope", scope}})});
  f.reply({call("finish", {{"summary", "root"}})});
  f.reply({call("run", {{"command", "python3"}, {"args", {"step1.py"}}}), call("run", {{"command", "python3"}, {"args", {"step2.py"}}})});
  f.reply({call("finish", {{"summary", "child"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(f.ws.read("out.txt"), "none") << claim("runner.workspace-persists-privately", "a spawned task saw beyond its declared view");
  EXPECT_FALSE(f.ws.exists("scratch.txt"));
}

// ---- memory store and mailbox ----

TEST(RunnerMemoryStoreContained, OneCommitPerRunAndHostileStoresAbort) {
  if (::access("/usr/bin/git", X_OK) != 0) GTEST_SKIP() << "git not installed";
  RunFixture f;
  f.reply({call("finish", {{"summary", "one"}})});
  ASSERT_EQ(f.run().exit_code, 0);
  ASSERT_EQ(f.run().exit_code, 0);  // the replay starts over: a second run
  RunResult log = corral::testing::run({"/usr/bin/git", "-C", f.ws / ".corral/mem", "rev-list", "--count", "HEAD"},
                                       {.env_extra = {"GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent"}});
  EXPECT_EQ(log.out, "2\n") << log.describe();
  EXPECT_EQ(f.entries("memory_store").back()["status"], "committed");

  // A .git file pointing elsewhere, and a symlinked store: the run is refused and traced.
  TempDir elsewhere("elsewhere");
  ASSERT_EQ(corral::testing::run({"/usr/bin/git", "init", "-q", elsewhere.path()}).exit_code, 0);
  RunFixture g;
  g.reply({call("finish", {{"summary", "x"}})});
  ::mkdir((g.ws / ".corral").c_str(), 0755);
  ::mkdir((g.ws / ".corral/mem").c_str(), 0755);
  g.ws.write(".corral/mem/.git", "gitdir: " + elsewhere.path() + "/.git\n");
  RunResult r = g.run();
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  auto m = g.entries("memory_store");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0]["status"], "refused");
  EXPECT_EQ(g.entries("model_call").size(), 0u);

  RunFixture h;
  h.reply({call("finish", {{"summary", "x"}})});
  ::mkdir((h.ws / ".corral").c_str(), 0755);
  ASSERT_EQ(::symlink(elsewhere.path().c_str(), (h.ws / ".corral/mem").c_str()), 0);
  EXPECT_EQ(h.run().exit_code, 125);
  EXPECT_FALSE(elsewhere.exists("runs"));
}

// A mailbox directory swapped for a symlink (or any part of it) is refused like a crafted
// memory store: 125 before the run started, the reason on stderr, and no memory commit.
TEST(RunnerMemoryStoreContained, ASymlinkedMailboxIsRefusedBeforeTheRunAndCommitsNothing) {
  TempDir elsewhere("elsewhere");
  for (const char* planted : {".corral/mailbox", ".corral/mailbox/inbox", ".corral/mailbox/outbox"}) {
    SCOPED_TRACE(planted);
    RunFixture f;
    f.reply({call("finish", {{"summary", "x"}})});
    std::filesystem::create_directories(std::filesystem::path(f.ws / planted).parent_path());
    ASSERT_EQ(::symlink(elsewhere.path().c_str(), (f.ws / planted).c_str()), 0);
    RunResult r = f.run();
    EXPECT_EQ(r.exit_code, 125) << r.describe();
    EXPECT_NE(r.err.find("corral: run: aborted: mailbox: "), std::string::npos) << r.describe();
    EXPECT_NE(r.err.find("is not a real directory"), std::string::npos) << r.describe();
    EXPECT_FALSE(f.ws.exists(".corral/mem")) << "a memory commit was made for a run refused in its setup";
    EXPECT_TRUE(std::filesystem::is_empty(elsewhere.path())) << "the mailbox was made through the symlink";
  }
}

// The host's git runs on the store outside any sandbox, so a workspace that arrives with a
// crafted store must not steer it: commondir naming an unchecked config (whose clean filter
// would run a program on the host), a symlink or hard link through which git's own writes
// land elsewhere, alternates borrowing objects. Each is refused before git runs.
TEST(RunnerMemoryStoreContained, ACraftedStoreNeverSteersTheHostsGit) {
  if (::access("/usr/bin/git", X_OK) != 0) GTEST_SKIP() << "git not installed";
  TempDir outside("outside");
  const std::string marker = outside.path() + "/ran";
  const std::string victim = outside.path() + "/victim";
  auto plant = [&](RunFixture& f) {
    f.reply({call("finish", {{"summary", "x"}})});
    ASSERT_EQ(corral::testing::run({"/usr/bin/git", "init", "-q", f.ws / ".corral/mem"}).exit_code, 0);
    f.ws.write(".corral/mem/.gitattributes", "runs/* filter=x\n");
    f.ws.write(".corral/mem/p.sh", "id > " + marker + "\ncat\n");
  };
  struct Case {
    const char* what;
    std::function<void(RunFixture&)> hostile;
  };
  const Case cases[] = {
      {"commondir", [&](RunFixture& f) {
         ::mkdir((f.ws / ".corral/mem/.git/c").c_str(), 0755);
         f.ws.write(".corral/mem/.git/commondir", "c\n");
         f.ws.write(".corral/mem/.git/c/config", "[core]\n\trepositoryformatversion = 0\n[filter \"x\"]\n\tclean = sh ./p.sh\n");
       }},
      {"config.worktree", [&](RunFixture& f) {
         f.ws.write(".corral/mem/.git/config.worktree", "[filter \"x\"]\n\tclean = sh ./p.sh\n");
       }},
      {"symlinked reflog", [&](RunFixture& f) {
         ::mkdir((f.ws / ".corral/mem/.git/logs").c_str(), 0755);
         ASSERT_EQ(::symlink(victim.c_str(), (f.ws / ".corral/mem/.git/logs/HEAD").c_str()), 0);
       }},
      {"hard-linked reflog", [&](RunFixture& f) {
         ::mkdir((f.ws / ".corral/mem/.git/logs").c_str(), 0755);
         ASSERT_EQ(::link(victim.c_str(), (f.ws / ".corral/mem/.git/logs/HEAD").c_str()), 0);
       }},
      {"symlinked objects", [&](RunFixture& f) {
         ASSERT_EQ(corral::testing::run({"/bin/rm", "-rf", f.ws / ".corral/mem/.git/objects"}).exit_code, 0);
         ASSERT_EQ(::symlink(outside.path().c_str(), (f.ws / ".corral/mem/.git/objects").c_str()), 0);
       }},
      {"alternates", [&](RunFixture& f) {
         f.ws.write(".corral/mem/.git/objects/info/alternates", outside.path() + "\n");
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::filesystem::remove(marker);
    std::filesystem::remove(victim);
    outside.write("victim", "untouched\n");
    RunFixture f;
    plant(f);
    c.hostile(f);
    RunResult r = f.run();
    EXPECT_EQ(r.exit_code, 125) << claim("runner.memory-store-contained", c.what) << r.describe();
    EXPECT_FALSE(std::filesystem::exists(marker)) << claim("runner.memory-store-contained", "a program ran on the host");
    EXPECT_EQ(outside.read("victim"), "untouched\n") << claim("runner.memory-store-contained", "git wrote through a link");
    auto m = f.entries("memory_store");
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0]["status"], "refused");
  }
  // Control: the same planted store without the hostile part commits, and the filter in the
  // checked .git/config would have been refused by the config check, not ignored.
  RunFixture ok;
  plant(ok);
  RunResult r = ok.run();
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(ok.entries("memory_store").back()["status"], "committed");
  EXPECT_FALSE(std::filesystem::exists(marker));
}

// The host's git runs on the store, so what was checked must stay so until git has run:
// a store another user could change in between (a directory writable by group or others, or
// owned by someone else) is refused before anything runs. corral's own stores pass, also
// when the caller's umask would have made them group-writable.
TEST(RunnerMemoryStoreContained, AStoreAnotherUserCouldChangeIsRefused) {
  if (::access("/usr/bin/git", X_OK) != 0) GTEST_SKIP() << "git not installed";
  RunFixture f;
  f.reply({call("finish", {{"summary", "one"}})});
  const mode_t old_umask = ::umask(002);
  RunResult first = f.run();
  RunResult second = f.run();
  ::umask(old_umask);
  ASSERT_EQ(first.exit_code, 0) << first.describe();
  ASSERT_EQ(second.exit_code, 0) << "corral's own store (umask 002) was refused: " << second.describe();
  EXPECT_EQ(f.entries("memory_store").back()["status"], "committed");

  for (const char* rel : {".corral/mem", ".corral/mem/.git", ".corral/mem/.git/objects", ".corral/mem/.git/config"}) {
    SCOPED_TRACE(rel);
    struct stat st;
    ASSERT_EQ(::stat((f.ws / rel).c_str(), &st), 0);
    ASSERT_EQ(::chmod((f.ws / rel).c_str(), (st.st_mode & 07777) | 020), 0);
    const size_t before = f.entries("model_call").size();
    RunResult r = f.run();
    EXPECT_EQ(r.exit_code, 125) << claim("runner.memory-store-contained", "a group-writable store was used") << r.describe();
    EXPECT_NE(runJson(r).value("reason", "").find("writable by group or others"), std::string::npos) << r.describe();
    EXPECT_EQ(f.entries("model_call").size(), before) << "the model was called";
    ASSERT_EQ(::chmod((f.ws / rel).c_str(), st.st_mode & 07777), 0);
  }
  ASSERT_EQ(f.run().exit_code, 0) << "control: the restored store works again";
  if (isRoot()) {  // a store owned by another user, as when root runs on a user's workspace
    ASSERT_EQ(::chown((f.ws / ".corral/mem/.git/refs").c_str(), kNobody, kNobody), 0);
    RunResult r = f.run();
    EXPECT_EQ(r.exit_code, 125) << claim("runner.memory-store-contained", "a store owned by another user was used");
    EXPECT_NE(runJson(r).value("reason", "").find("belongs to uid 65534"), std::string::npos) << r.describe();
  }
}

// A default POSIX ACL is inherited by what git creates, and under one the umask does not
// apply: one on .corral naming another user would make the new .git writable by that user.
// corral drops the ACL its new store inherited; a default ACL inside the store is refused.
bool setDefaultAclGrantingWrite(const std::string& dir, uint32_t uid) {
  struct Entry {
    uint16_t tag, perm;
    uint32_t id;
  };
  struct {
    uint32_t version;
    Entry e[5];
  } acl = {2, {{0x01, 7, 0xFFFFFFFF}, {0x02, 7, uid}, {0x04, 5, 0xFFFFFFFF}, {0x10, 7, 0xFFFFFFFF}, {0x20, 5, 0xFFFFFFFF}}};
  return ::setxattr(dir.c_str(), "system.posix_acl_default", &acl, sizeof(acl), 0) == 0;
}

TEST(RunnerMemoryStoreContained, AnInheritedDefaultAclNeverOpensTheStoreToAnotherUser) {
  if (::access("/usr/bin/git", X_OK) != 0) GTEST_SKIP() << "git not installed";
  RunFixture f;
  f.reply({call("finish", {{"summary", "one"}})});
  ASSERT_EQ(::mkdir((f.ws / ".corral").c_str(), 0755), 0);
  if (!setDefaultAclGrantingWrite(f.ws / ".corral", 65533)) GTEST_SKIP() << "no POSIX ACLs here: " << std::strerror(errno);
  RunResult first = f.run();
  ASSERT_EQ(first.exit_code, 0) << first.describe();
  EXPECT_EQ(f.entries("memory_store").back()["status"], "committed");
  for (const char* rel : {".corral/mem", ".corral/mem/.git", ".corral/mem/.git/objects"}) {
    struct stat st;
    ASSERT_EQ(::stat((f.ws / rel).c_str(), &st), 0) << rel;
    EXPECT_EQ(st.st_mode & 022, 0u) << claim("runner.memory-store-contained", std::string(rel) + " is writable by another user");
    EXPECT_LT(::getxattr((f.ws / rel).c_str(), "system.posix_acl_default", nullptr, 0), 0) << rel << " kept a default ACL";
  }
  RunResult second = f.run();
  EXPECT_EQ(second.exit_code, 0) << "corral's own store was refused: " << second.describe();
  // A default ACL inside the store: refused before git runs.
  ASSERT_TRUE(setDefaultAclGrantingWrite(f.ws / ".corral/mem/.git/refs", 65533));
  RunResult r = f.run();
  EXPECT_EQ(r.exit_code, 125) << claim("runner.memory-store-contained", "a store with a default ACL was used");
  EXPECT_NE(runJson(r).value("reason", "").find("default ACL"), std::string::npos) << r.describe();
}

TEST(RunnerMemoryStore, WithoutGitTheRunContinuesOnFileBackedMemory) {
  RunFixture f;
  f.reply({call("finish", {{"summary", "one"}})});
  RunResult r = f.run({"--apply"}, {.env_extra = {"CORRAL_GIT=none"}});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto m = f.entries("memory_store");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0]["status"], "file");
  EXPECT_NE(m[0]["reason"].get<std::string>().find("git unavailable"), std::string::npos);
  EXPECT_FALSE(f.ws.exists(".corral/mem/.git"));
  // The next run takes the store it left (runs/ only) and keeps writing to it.
  RunResult again = f.run({"--apply"}, {.env_extra = {"CORRAL_GIT=none"}});
  ASSERT_EQ(again.exit_code, 0) << again.describe();
  EXPECT_EQ(f.entries("memory_store").back()["status"], "file");
}

// git makes its working directory an absolute path and reopens .git through it: if another
// user could rename the store or a directory above it (here: the workspace is writable by
// everyone, without the sticky bit), the host's git is not run at all.
TEST(RunnerMemoryStoreContained, NoHostGitWhereAnotherUserCouldRenameThePath) {
  if (::access("/usr/bin/git", X_OK) != 0) GTEST_SKIP() << "git not installed";
  RunFixture f;
  f.reply({call("finish", {{"summary", "one"}})});
  ASSERT_EQ(::chmod(f.ws.path().c_str(), 0777), 0);
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto m = f.entries("memory_store");
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.back()["status"], "file") << claim("runner.memory-store-contained", "git ran below a directory others can rename");
  EXPECT_NE(m.back()["reason"].get<std::string>().find("host git skipped"), std::string::npos) << m.back().dump();
  EXPECT_FALSE(f.ws.exists(".corral/mem/.git"));
  // Control: with the workspace private again, the next run commits.
  ASSERT_EQ(::chmod(f.ws.path().c_str(), 0755), 0);
  RunResult again = f.run();
  ASSERT_EQ(again.exit_code, 0) << again.describe();
  EXPECT_EQ(f.entries("memory_store").back()["status"], "committed");
}

TEST(RunnerMailbox, MessagesBothWaysAreStoredAndTraced) {
  RunFixture f;
  ::mkdir((f.ws / ".corral").c_str(), 0755);
  ::mkdir((f.ws / ".corral/mailbox").c_str(), 0755);
  ::mkdir((f.ws / ".corral/mailbox/inbox").c_str(), 0755);
  f.ws.write(".corral/mailbox/inbox/001-hello", "use tabs");
  f.reply({call("mailbox_read", json::object()), call("mailbox_send", {{"to", "operator"}, {"body", "question?"}}),
           call("mailbox_send", {{"to", "someone-else"}, {"body", "x"}}),
           call("mailbox_send", {{"to", "operator"}, {"body", std::string(70000, 'a')}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run({});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = f.toolCalls();
  ASSERT_EQ(calls.size(), 5u);
  EXPECT_EQ(calls[0]["messages"][0]["bytes"], 8);
  EXPECT_EQ(calls[1]["decision"], "allow");
  EXPECT_TRUE(refusedWith(calls, 2, "mailbox.to"));
  EXPECT_TRUE(refusedWith(calls, 3, "mailbox.size"));
  EXPECT_TRUE(f.ws.exists(".corral/mailbox/inbox/delivered/001-hello"));
  EXPECT_EQ(f.ws.entries().size(), f.ws.entries().size());
  EXPECT_EQ(f.allRecordBytes().find("use tabs") != std::string::npos, true);  // the operator's file, kept
}

// --- audit.run-steps-recorded: no input can leave a run unsealed ---

// A trace line has a size limit. A model that asked for a command with 256 arguments of 256
// bytes each, or a workspace with thousands of refused entries, made one entry outgrow it,
// and the run ended 125 with no result: the offending call never recorded, and the record
// unsealed for good. Now such lists end in one {"more", "bytes", "sha256"} entry.
TEST(AuditRunStepsRecorded, NoToolCallOrWorkspaceCanOutgrowATraceLine) {
  RunFixture f;
  f.manifest["inputs"] = {"*.txt"};
  f.ws.write("in.txt", "x");
  for (int i = 0; i < 3000; ++i)
    ASSERT_EQ(::symlink("in.txt", (f.ws / ("l" + std::to_string(i) + ".txt")).c_str()), 0);
  const nlohmann::json many = std::vector<std::string>(256, std::string(256, 'a'));
  nlohmann::json allowed = {"-c", "pass"};
  for (int i = 0; i < 254; ++i) allowed.push_back(std::string(256, 'b'));
  f.reply({call("run", {{"command", "not-allowed"}, {"args", many}})});
  f.reply({call("run", {{"command", "python3"}, {"args", allowed}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << claim("audit.run-steps-recorded", "the run did not finish") << r.describe();
  EXPECT_TRUE(f.result().is_object()) << claim("audit.run-steps-recorded", "no result.json: the record is unsealed");
  RunResult v = corral::testing::run({corralBin(), "verify", f.ws.path()});
  EXPECT_EQ(v.exit_code, 0) << v.describe();
  auto calls = f.toolCalls();
  ASSERT_EQ(calls.size(), 3u) << claim("audit.run-steps-recorded", "a tool call is missing from the trace");
  EXPECT_EQ(calls[0]["decision"], "refuse") << calls[0].dump();
  EXPECT_EQ(calls[1]["decision"], "allow") << calls[1].dump();
  const nlohmann::json refused_tail = calls[0]["args"]["args"].back();
  const nlohmann::json allowed_tail = calls[1]["args"]["argv"].back();
  EXPECT_GT(refused_tail.value("more", 0), 0) << refused_tail.dump();
  EXPECT_GT(allowed_tail.value("more", 0), 0) << allowed_tail.dump();
  auto staged = f.entries("workspace_staged");
  ASSERT_EQ(staged.size(), 1u);
  EXPECT_GT(staged[0]["refused"].back().value("more", 0), 0) << "the refused list is bounded";
  EXPECT_TRUE(f.entries("entry_oversized").empty()) << "each list was bounded at its source";
}

// An output is hashed for result.json as a stream. Read whole, a sparse 256 MiB output (one
// truncate(1)) took 512 MiB of corral's memory, and past 4 GiB it was committed with an empty
// hash and "changed": false. Here corral's address space is capped at 200 MB.
TEST(AuditRunStepsRecorded, AnOutputIsHashedWithoutBeingHeldInMemory) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(CORRAL_SANITIZED)
  GTEST_SKIP() << "a sanitizer reserves terabytes of address space: no RLIMIT_AS fits it";
#endif
  RunFixture f;
  f.manifest["outputs"] = {"big.bin"};
  f.manifest["executables"] = {"truncate"};
  f.reply({call("run", {{"command", "truncate"}, {"args", {"-s", "256M", "big.bin"}}})});
  f.reply({call("finish", {{"summary", "done"}})});
  f.writeFiles();
  RunResult r = corral::testing::run({"/usr/bin/prlimit", "--as=200000000", corralBin(), "run", f.ws / "manifest.json",
                                      "--json", "--apply"},
                                     RunOptions{.deadline = std::chrono::milliseconds(120'000)});
  ASSERT_EQ(r.exit_code, 0) << claim("audit.run-steps-recorded", "the run failed hashing a large output") << r.describe();
  const nlohmann::json result = f.result();
  ASSERT_TRUE(result.is_object()) << r.describe();
  // SHA-256 of 256 MiB of zero bytes.
  EXPECT_NE(result.dump().find("a6d72ac7690f53be6ae46ba88506bd97302a093f7108472bd9efc3cefda06484"), std::string::npos)
      << result.dump();
  ::unlink((f.ws / "big.bin").c_str());
}

// The run's counters agree with its trace: calls refused before their handler (after the
// task finished, past the wall time) are tool calls too. A reply [finish, read, read] gave
// three tool_call entries but "tool_calls": 1, "refusals": 2.
TEST(AuditRunStepsRecorded, TheCountersAgreeWithTheToolCallsTraced) {
  RunFixture f;
  f.ws.write("in.txt", "x");
  f.reply({call("finish", {{"summary", "done"}}), call("read", {{"path", "in.txt"}}), call("read", {{"path", "in.txt"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const size_t traced = f.toolCalls().size();
  ASSERT_EQ(traced, 3u);
  const nlohmann::json summary = runJson(r);
  EXPECT_EQ(summary.value("tool_calls", -1), 3) << claim("audit.run-steps-recorded", "counters disagree with the trace")
                                                << summary.dump();
  EXPECT_EQ(summary.value("refusals", -1), 2) << summary.dump();
  auto end = f.entries("run_end");
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(end[0].value("tool_calls", -1), 3) << end[0].dump();
}

// --- audit.chain-tamper-evident: the workspace's outputs against the record ---

// A run that writes out.txt ("the run's work\n", 15 bytes) and applies it to the workspace.
void runApplyingOneOutput(RunFixture& f) {
  f.reply({call("write", {{"path", "out.txt"}, {"content", "the run's work\n"}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
}

// `corral verify` checked the record alone: an output the run applied could be replaced in
// the workspace afterwards and the record still said "ok". It now compares every output the
// body says was applied with the workspace (its sha256), beneath the workspace and never
// through a symlink; --record-only leaves the workspace out.
TEST(AuditChainTamperEvident, AnAppliedOutputChangedAfterTheRunFailsVerify) {
  RunFixture f;
  ASSERT_NO_FATAL_FAILURE(runApplyingOneOutput(f));
  auto verify = [&](std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {corralBin(), "verify", f.ws.path()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return corral::testing::run(argv);
  };
  RunResult ok = verify();
  EXPECT_EQ(ok.exit_code, 0) << "control" << ok.describe();
  EXPECT_NE(ok.out.find("1 applied output matches the workspace"), std::string::npos) << ok.describe();

  f.ws.write("out.txt", "something else\n");
  RunResult changed = verify();
  EXPECT_EQ(changed.exit_code, 1) << claim("audit.chain-tamper-evident", "a replaced output verified") << changed.describe();
  EXPECT_NE(changed.err.find("output \"out.txt\" differs from what the run wrote"), std::string::npos) << changed.describe();
  EXPECT_EQ(verify({"--record-only"}).exit_code, 0) << "--record-only checks the record alone";

  ::unlink((f.ws / "out.txt").c_str());
  ASSERT_EQ(::symlink("/etc/hostname", (f.ws / "out.txt").c_str()), 0);
  RunResult linked = verify();
  EXPECT_EQ(linked.exit_code, 1) << claim("audit.chain-tamper-evident", "an output swapped for a symlink verified")
                                 << linked.describe();
  ::unlink((f.ws / "out.txt").c_str());
  RunResult missing = verify();
  EXPECT_EQ(missing.exit_code, 1) << missing.describe();
  EXPECT_NE(missing.err.find("is missing from the workspace"), std::string::npos) << missing.describe();
}

// A hostile workspace must not keep the verifier busy: an output grown after the run into a
// sparse terabyte fails on its size, unread (hashing it would take an hour of zeros).
TEST(AuditChainTamperEvident, AnOutputGrownAfterTheRunFailsOnItsSizeWithoutBeingRead) {
  RunFixture f;
  ASSERT_NO_FATAL_FAILURE(runApplyingOneOutput(f));
  const nlohmann::json body = nlohmann::json::parse(f.ws.read(".corral/result.json"))["body"];
  ASSERT_EQ(body["outputs"][0].value("bytes", uint64_t{0}), 15u) << "the body records the size copied back";

  ASSERT_EQ(::truncate((f.ws / "out.txt").c_str(), off_t{1} << 40), 0) << "a sparse 1 TiB file";
  RunOptions quick;
  quick.deadline = std::chrono::seconds(30);  // reading a tebibyte of holes takes far longer
  RunResult grown = corral::testing::run({corralBin(), "verify", f.ws.path()}, quick);
  EXPECT_FALSE(grown.deadline_hit) << claim("audit.chain-tamper-evident", "verify read a grown output whole")
                                   << grown.describe();
  EXPECT_EQ(grown.exit_code, 1) << grown.describe();
  EXPECT_NE(grown.err.find("differs from what the run wrote (15 bytes, now 1099511627776)"), std::string::npos)
      << grown.describe();
  EXPECT_EQ(grown.stderrLines().size(), 1u) << grown.describe();
}

}  // namespace
}  // namespace corral::testing
