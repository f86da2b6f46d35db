// SPDX-License-Identifier: Apache-2.0
// audit.run-steps-recorded: every step of a real run (an OpenAI-compatible stub endpoint,
// real sandboxed commands) is in the trace, the record verifies with the signing key, and
// sentinel secrets (API key, signing key) and contents (task text, file contents, command
// output) never appear in anything corral wrote.
#include <algorithm>
#include <csignal>
#include <sstream>
#include <thread>

#include "run_fixture.h"

namespace corral::testing {
namespace {

using nlohmann::json;

const std::string kKeySentinel = "sk-SENTINEL-api-key-7c1e94";
const std::string kTaskSentinel = "TASK-SENTINEL-3b2f";
const std::string kFileSentinel = "FILE-SENTINEL-9d41";

json toolCallMessage(std::vector<std::pair<std::string, json>> calls) {
  json tc = json::array();
  int n = 0;
  for (auto& [name, args] : calls)
    tc.push_back({{"id", "call_" + std::to_string(n++)}, {"type", "function"},
                  {"function", {{"name", name}, {"arguments", args.dump()}}}});
  return {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", tc}};
}

struct Stub {
  TempDir dir{"stub"};
  std::optional<Process> proc;
  int port = -1;
  explicit Stub(const json& replies) {
    dir.write("replies.json", replies.dump());
    proc.emplace(Process::start({"/usr/bin/python3", std::string(CORRAL_SOURCE_DIR) + "/tests/security/stub_openai.py",
                                 dir / "replies.json", dir / "log.jsonl"}));
    auto line = proc->readLine(std::chrono::seconds(10));
    if (line) port = std::stoi(*line);
  }
  std::vector<json> requests() const {
    std::vector<json> out;
    std::istringstream in(dir.read("log.jsonl"));
    for (std::string l; std::getline(in, l);) out.push_back(json::parse(l));
    return out;
  }
};

TEST(AuditRunStepsRecorded, EveryStepTracedAndNoSecretOrContentWritten) {
  json replies = json::array();
  replies.push_back(toolCallMessage({{"read", {{"path", "in.txt"}}}, {"run", {{"command", "python3"}, {"args", {"env.py"}}}}}));
  replies.push_back(toolCallMessage({{"run", {{"command", "sh"}, {"args", {"-c", "env"}}}}, {"write", {{"path", "out.txt"}, {"content", "ok"}}}}));
  replies.push_back(toolCallMessage({{"finish", {{"summary", "done"}}}}));
  Stub stub(replies);
  ASSERT_GT(stub.port, 0) << "stub server did not start";

  TempDir keys("keys");
  ASSERT_EQ(corral::testing::run({corralBin(), "keygen", "--out", keys / "k"}).exit_code, 0);
  const std::string pem = keys.read("k/audit-ed25519-private.pem");
  ASSERT_FALSE(pem.empty());
  const std::string pem_body = pem.substr(pem.find('\n') + 1, 40);

  RunFixture f;
  f.manifest["task"] = "Do the thing. " + kTaskSentinel;
  f.manifest["model"] = {{"provider", "openai"}, {"endpoint", "http://127.0.0.1:" + std::to_string(stub.port) + "/v1"},
                         {"model", "stub"}, {"api_key_env", "CORRAL_TEST_API_KEY"}};
  f.ws.write("in.txt", kFileSentinel + "\n");
  f.ws.write("env.py", "import os\nfor k, v in sorted(os.environ.items()): print(k, v)\n");
  RunOptions o;
  o.env_extra = {"CORRAL_TEST_API_KEY=" + kKeySentinel, "CORRAL_AUDIT_PRIVATE_KEY=" + pem};
  RunResult r = f.run({"--apply"}, o);
  ASSERT_EQ(r.exit_code, 0) << r.describe();

  // Every step, in order.
  std::vector<std::string> types;
  for (const json& e : f.trace()) types.push_back(e["type"]);
  auto count = [&](const std::string& t) { return std::count(types.begin(), types.end(), t); };
  EXPECT_EQ(types.front(), "run_start");
  EXPECT_EQ(types.back(), "run_end");
  EXPECT_EQ(count("model_call"), 3) << claim("audit.run-steps-recorded", "model calls missing");
  EXPECT_EQ(count("tool_call"), 5) << claim("audit.run-steps-recorded", "tool calls missing");
  EXPECT_EQ(count("task_start"), 1);
  EXPECT_EQ(count("task_end"), 1);
  auto calls = f.toolCalls();
  ASSERT_EQ(calls.size(), 5u);
  EXPECT_EQ(calls[2]["decision"], "refuse");  // sh is not allowlisted: the refusal is a step too
  auto mc = f.entries("model_call");
  EXPECT_EQ(mc[0]["input_tokens"], 101);
  EXPECT_TRUE(mc[0].contains("response_sha256"));

  // The record verifies against the operator's public key.
  RunResult v = corral::testing::run({corralBin(), "verify", f.ws.path(), "--public-key", keys / "k/audit-ed25519-public.pem"});
  EXPECT_EQ(v.exit_code, 0) << v.describe();

  // Sentinels: nowhere in the record, the outputs or corral's own output.
  const std::string written = f.allRecordBytes() + f.ws.read("out.txt") + r.out + r.err;
  for (const std::string& s : {kKeySentinel, pem_body, kTaskSentinel, kFileSentinel})
    EXPECT_EQ(written.find(s), std::string::npos) << claim("audit.run-steps-recorded", "sentinel written: " + s.substr(0, 12));

  // The sandboxed command never saw the key: the env it printed went back to the model.
  auto reqs = stub.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[1]["body"].get<std::string>().find(kKeySentinel), std::string::npos)
      << claim("audit.run-steps-recorded", "the API key reached a sandboxed command");
  EXPECT_EQ(reqs[1]["body"].get<std::string>().find("CORRAL_AUDIT_PRIVATE_KEY"), std::string::npos);
  // Controls: the key did go to the endpoint, and the contents did reach the model.
  EXPECT_EQ(reqs[0]["headers"].value("Authorization", ""), "Bearer " + kKeySentinel);
  EXPECT_NE(reqs[0]["body"].get<std::string>().find(kTaskSentinel), std::string::npos);
  EXPECT_NE(reqs[1]["body"].get<std::string>().find(kFileSentinel), std::string::npos);
  EXPECT_NE(reqs[1]["body"].get<std::string>().find("HOME /workspace"), std::string::npos);
}

TEST(AuditRunStepsRecorded, AnInterruptedRunIsDetectedByTheNextRun) {
  RunFixture f;
  f.manifest["executables"] = {"python3"};
  f.ws.write("sleep.py", "import time\nprint('sleeping', flush=True)\ntime.sleep(60)\n");
  f.reply({call("run", {{"command", "python3"}, {"args", {"sleep.py"}}})});
  f.writeFiles();
  Process p = Process::start({corralBin(), "run", f.ws / "manifest.json", "--apply"});
  // Wait until the sandboxed command is running (its tool_call is not yet traced).
  bool started = false;
  for (int i = 0; i < 200 && !started; ++i) {
    started = f.ws.read(".corral/trace.jsonl").find("workspace_staged") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(started);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  p.signal(SIGKILL);
  p.wait();
  // No sandbox process survives corral's SIGKILL.
  for (int i = 0; i < 100; ++i) {
    RunResult pg = corral::testing::run({"/usr/bin/pgrep", "-f", "sleep.py"});
    if (pg.exit_code != 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(corral::testing::run({"/usr/bin/pgrep", "-f", "sleep.py"}).exit_code, 0) << "a sandbox process survived";
  // The trace left behind is a verifiable chain; result.json does not commit to it.
  const size_t before = f.trace().size();
  EXPECT_GE(before, 3u);
  for (const json& e : f.trace()) EXPECT_TRUE(e.is_object());

  // A second run in the same workspace.
  f.replies.clear();
  f.reply({call("finish", {{"summary", "after"}})});
  RunResult r = f.run();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto interrupted = f.entries("previous_run_interrupted");
  ASSERT_EQ(interrupted.size(), 1u) << claim("audit.run-steps-recorded", "an interrupted run went unnoticed");
  EXPECT_EQ(interrupted[0]["last_type"], "model_call");
  EXPECT_EQ(corral::testing::run({corralBin(), "verify", f.ws.path()}).exit_code, 0);
}

}  // namespace
}  // namespace corral::testing

namespace corral::testing {
namespace {

TEST(AuditRunStepsRecorded, TraceContentFullKeepsContentsAsBlobsNamedByTheirHash) {
  RunFixture f;
  f.ws.write("in.txt", kFileSentinel + "\n");
  f.reply({call("read", {{"path", "in.txt"}})});
  f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = f.run({"--trace-content", "full"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::string hash = f.toolCalls().at(0)["sha256"];
  EXPECT_EQ(f.ws.read(".corral/blobs/" + hash), kFileSentinel + "\n");
  // The trace itself still names contents by hash only, and the record verifies.
  EXPECT_EQ(f.ws.read(".corral/trace.jsonl").find(kFileSentinel), std::string::npos);
  EXPECT_EQ(corral::testing::run({corralBin(), "verify", f.ws.path()}).exit_code, 0);
  // Control: by default nothing is kept.
  RunFixture g;
  g.ws.write("in.txt", kFileSentinel + "\n");
  g.reply({call("read", {{"path", "in.txt"}})});
  g.reply({call("finish", {{"summary", "done"}})});
  ASSERT_EQ(g.run({}).exit_code, 0);
  EXPECT_FALSE(g.ws.exists(".corral/blobs"));
}

// A run appends to the record it finds, and its signed result covers every line. The lines
// it inherited are vouched for only as "there when the run began", so the run records how
// they were sealed and verify says so: a forged prefix with no result (or a crashed run's
// tail) reads NOT sealed, a prefix sealed by the same key reads as such.
TEST(AuditResultSigned, ASignedRunSaysHowTheLinesItInheritedWereSealed) {
  TempDir keys("keys");
  ASSERT_EQ(corral::testing::run({corralBin(), "keygen", "--out", keys / "k"}).exit_code, 0);
  RunOptions o;
  o.env_extra = {"CORRAL_AUDIT_PRIVATE_KEY=" + keys.read("k/audit-ed25519-private.pem")};
  auto verify = [&](const TempDir& ws) {
    return corral::testing::run({corralBin(), "verify", ws.path(), "--public-key", keys / "k/audit-ed25519-public.pem"});
  };

  RunFixture f;
  f.reply({call("finish", {{"summary", "one"}})});
  ASSERT_EQ(f.run({"--apply"}, o).exit_code, 0);
  RunResult v1 = verify(f.ws);
  ASSERT_EQ(v1.exit_code, 0) << v1.describe();
  EXPECT_EQ(v1.out.find("predate"), std::string::npos) << "a first run inherits nothing" << v1.describe();
  const std::string first_trace = f.ws.read(".corral/trace.jsonl");
  const size_t first_lines = static_cast<size_t>(std::count(first_trace.begin(), first_trace.end(), '\n'));

  ASSERT_EQ(f.run({"--apply"}, o).exit_code, 0);  // a second run on the sealed record
  RunResult v2 = verify(f.ws);
  ASSERT_EQ(v2.exit_code, 0) << v2.describe();
  EXPECT_NE(v2.out.find("lines 1-" + std::to_string(first_lines) + " predate the run that wrote result.json; each "
                        "earlier run's result was signed with the same key"),
            std::string::npos)
      << v2.describe();

  // A record whose lines no result seals (here: a real run's trace with its result removed,
  // as good as a forged one): the next signed run verifies, and verify says what it covers.
  RunFixture g;
  g.reply({call("finish", {{"summary", "two"}})});
  ::mkdir((g.ws / ".corral").c_str(), 0755);
  g.ws.write(".corral/trace.jsonl", first_trace);
  ASSERT_EQ(g.run({"--apply"}, o).exit_code, 0);
  RunResult v3 = verify(g.ws);
  ASSERT_EQ(v3.exit_code, 0) << v3.describe();
  const std::string unsealed_note = "lines 1-" + std::to_string(first_lines) + " were NOT sealed by any result";
  EXPECT_NE(v3.out.find(unsealed_note), std::string::npos)
      << claim("audit.result-signed", "a signed result vouched silently for lines it inherited unsealed") << v3.describe();
  RunResult j = corral::testing::run({corralBin(), "verify", g.ws.path(), "--json"});
  json report = json::parse(j.out);
  EXPECT_EQ(report["prior"], "unsealed") << j.describe();
  EXPECT_EQ(report["prior_lines"], first_lines);
  EXPECT_EQ(report["unvouched_lines"], first_lines);

  // Another signed run on top seals its predecessor properly, but must not launder the
  // unsealed prefix the predecessor found: verify reports the widest unvouched prefix.
  ASSERT_EQ(g.run({"--apply"}, o).exit_code, 0);
  RunResult v4 = verify(g.ws);
  ASSERT_EQ(v4.exit_code, 0) << v4.describe();
  EXPECT_NE(v4.out.find(unsealed_note), std::string::npos)
      << claim("audit.result-signed", "a later signed run laundered an unsealed prefix") << v4.describe();

  // A prefix sealed only by an unsigned result (which anyone can compute) is not vouched for.
  RunFixture h;
  h.reply({call("finish", {{"summary", "three"}})});
  ASSERT_EQ(h.run({"--apply"}).exit_code, 0);  // unsigned
  ASSERT_EQ(h.run({"--apply"}, o).exit_code, 0);
  RunResult v5 = verify(h.ws);
  ASSERT_EQ(v5.exit_code, 0) << v5.describe();
  EXPECT_NE(v5.out.find("sealed only by an unsigned result"), std::string::npos)
      << claim("audit.result-signed", "an unsigned seal read as reassurance") << v5.describe();
}

}  // namespace
}  // namespace corral::testing
