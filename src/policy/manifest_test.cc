// SPDX-License-Identifier: Apache-2.0
// Tests for parseManifest and manifestToCanonicalJson: every rule refuses its hostile input,
// and valid manifests parse to the values docs/manifest.md promises.
#include "policy/manifest.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace corral::policy {
namespace {

using Json = nlohmann::json;
using std::chrono::milliseconds;

constexpr const char* kMinimal =
    R"({"version":1,"task":"fix the bug","model":{"provider":"replay","transcript":"replay.json"}})";

// The full example of docs/manifest.md.
constexpr const char* kFull = R"({
  "version": 1,
  "task": "Fix the failing test in src/ and explain the change.",
  "model": {"provider": "openai", "endpoint": "https://api.openai.com/v1", "model": "gpt-4o-mini",
            "api_key_env": "OPENAI_API_KEY", "timeout": "90s", "max_retries": 3, "max_tokens": 8192},
  "inputs": ["src/**", "README.md", "tests/test_*.py"],
  "outputs": ["src/fix.py", "NOTES.md"],
  "executables": ["python3", "git"],
  "env": ["PYTHONDONTWRITEBYTECODE=1", "LANG=C.UTF-8"],
  "network": {"allow": []},
  "credentials": [],
  "budgets": {"max_turns": 30, "max_model_calls": 50, "wall_time": "15m", "command_timeout": "2m",
              "max_output_bytes": "32K", "max_loops": 3, "max_pending_tasks": 1},
  "sandbox": {"memory": "512M", "pids": 256, "cpu_time": "30s", "file_size": "64M", "tmp_size": "64M",
              "workspace_size": 268435456, "allow_weaker": ["memory"]}
})";

Json minimal() { return Json::parse(kMinimal); }

Result<Manifest> parse(const Json& j) { return parseManifest(j.dump()); }

// The refusal contract: kInvalidArgument, one line, "manifest: <path>: ...", and want in it.
void expectRefused(const Result<Manifest>& r, const std::string& want, const std::string& input_note) {
  ASSERT_FALSE(r.ok()) << "accepted: " << input_note;
  const std::string msg = r.error().message();
  EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kInvalidArgument)) << msg;
  EXPECT_EQ(msg.rfind("manifest: ", 0), 0u) << msg;
  // want is one or more '|'-separated parts that must appear in this order.
  size_t at = 0;
  for (size_t start = 0; start <= want.size();) {
    size_t bar = want.find('|', start);
    std::string part = want.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    at = msg.find(part, at);
    EXPECT_NE(at, std::string::npos) << "want '" << part << "' in: " << msg;
    if (at == std::string::npos || bar == std::string::npos) break;
    start = bar + 1;
  }
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_LT(msg.size(), 400u) << msg;
}

// Sets doc[a][b]... = value (json_pointer) on the minimal manifest and expects a refusal.
void refuseWith(const std::string& pointer, const Json& value, const std::string& want) {
  Json j = minimal();
  j[Json::json_pointer(pointer)] = value;
  expectRefused(parse(j), want, pointer + " = " + value.dump());
}

Json openai() {
  Json j = minimal();
  j["model"] = {{"provider", "openai"}, {"endpoint", "http://localhost:8080/v1"}, {"model", "m"}};
  return j;
}

TEST(ParseManifest, MinimalReplayGetsEveryDefault) {
  auto r = parseManifest(kMinimal);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const Manifest& m = *r;
  EXPECT_EQ(m.version, 1);
  EXPECT_EQ(m.task, "fix the bug");
  EXPECT_EQ(m.model.provider, "replay");
  EXPECT_EQ(m.model.transcript, "replay.json");
  EXPECT_TRUE(m.model.endpoint.empty());
  EXPECT_EQ(m.model.timeout, milliseconds(60000));
  EXPECT_EQ(m.model.max_retries, 2u);
  EXPECT_EQ(m.model.max_tokens, 4096u);
  EXPECT_EQ(m.budgets, Budgets{});
  EXPECT_EQ(m.sandbox, SandboxLimitsSpec{});
  EXPECT_TRUE(m.inputs.empty() && m.outputs.empty() && m.executables.empty() && m.env.empty());
}

TEST(ParseManifest, FullManifestParsesEveryField) {
  auto r = parseManifest(kFull);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const Manifest& m = *r;
  EXPECT_EQ(m.model.endpoint, "https://api.openai.com/v1");
  EXPECT_EQ(m.model.model, "gpt-4o-mini");
  EXPECT_EQ(m.model.api_key_env, "OPENAI_API_KEY");
  EXPECT_EQ(m.model.timeout, milliseconds(90000));
  EXPECT_EQ(m.model.max_retries, 3u);
  EXPECT_EQ(m.model.max_tokens, 8192u);
  EXPECT_EQ(m.inputs, (std::vector<std::string>{"src/**", "README.md", "tests/test_*.py"}));
  EXPECT_EQ(m.outputs, (std::vector<std::string>{"src/fix.py", "NOTES.md"}));
  EXPECT_EQ(m.executables, (std::vector<std::string>{"python3", "git"}));
  EXPECT_EQ(m.env, (std::vector<std::string>{"PYTHONDONTWRITEBYTECODE=1", "LANG=C.UTF-8"}));
  EXPECT_EQ(m.budgets.max_turns, 30u);
  EXPECT_EQ(m.budgets.max_model_calls, 50u);
  EXPECT_EQ(m.budgets.wall_time, milliseconds(15 * 60000));
  EXPECT_EQ(m.budgets.command_timeout, milliseconds(120000));
  EXPECT_EQ(m.budgets.max_output_bytes, 32u * 1024);
  EXPECT_EQ(m.budgets.max_loops, 3u);
  EXPECT_EQ(m.budgets.max_pending_tasks, 1u);
  EXPECT_EQ(m.sandbox.memory_bytes, 512ull << 20);
  EXPECT_EQ(m.sandbox.pids, 256u);
  EXPECT_EQ(m.sandbox.cpu_time, milliseconds(30000));
  EXPECT_EQ(m.sandbox.file_size_bytes, 64ull << 20);
  EXPECT_EQ(m.sandbox.tmp_bytes, 64ull << 20);
  EXPECT_EQ(m.sandbox.workspace_bytes, 256ull << 20);
  EXPECT_EQ(m.sandbox.allow_weaker, (std::vector<std::string>{"memory"}));
}

TEST(ParseManifest, AcceptsEdgeValues) {
  const std::pair<const char*, Json> cases[] = {
      {"/budgets/max_turns", 1},           {"/budgets/max_turns", 10000},
      {"/budgets/max_model_calls", 100000}, {"/budgets/wall_time", "1s"},
      {"/budgets/wall_time", "24h"},        {"/budgets/wall_time", "1.5s"},
      {"/budgets/max_pending_tasks", 0},    {"/budgets/max_pending_tasks", 1000},
      {"/budgets/max_loops", 1000},         {"/budgets/max_output_bytes", "16M"},
      {"/budgets/max_output_bytes", 1},     {"/model/max_retries", 0},
      {"/model/timeout", "10m"},            {"/model/max_tokens", 1000000},
      {"/model/endpoint", "not even a URL: replay ignores it"},
      {"/sandbox/pids", 1048576},           {"/sandbox/memory", "1T"},
      {"/sandbox/allow_weaker", Json::array({"cpu-time", "workspace-size", "open-files"})},
      {"/inputs", Json::array({"**", ".github/*.yml", "a/**/b", "?.txt", "a[1].txt"})},
      {"/executables", Json::array({"g++", "python3.11", "x86_64-linux-gnu-gcc", "clang_14"})},
      {"/env", Json::array({"EMPTY=", "X=a=b", "lower_case=1", "PATHS=ok", "LD=not-a-loader-var"})},
      {"/task", "multi\nline\ttask\r\n with UTF-8: caf\u00e9"},
      {"/network", Json::object()},
  };
  for (const auto& [pointer, value] : cases) {
    Json j = minimal();
    j[Json::json_pointer(pointer)] = value;
    if (std::string(pointer) == "/budgets/wall_time") j["budgets"]["command_timeout"] = "100ms";
    auto r = parse(j);
    EXPECT_TRUE(r.ok()) << pointer << " = " << value.dump() << ": " << r.error().message();
  }
}

TEST(ParseManifest, ReplayDropsTheEndpointSoOneManifestRecordsAndReplays) {
  Json j = minimal();
  j["model"]["endpoint"] = "https://example.com";
  j["model"]["model"] = "m";
  auto r = parse(j);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->model.endpoint.empty());
  EXPECT_EQ(r->model.model, "m");
}

TEST(ParseManifest, EndpointShapes) {
  for (const char* ok : {"http://localhost:11434", "https://api.anthropic.com/v1/", "http://[::1]:8080/x",
                         "http://10.0.0.1", "https://h.example/p?q=1"}) {
    Json j = openai();
    j["model"]["endpoint"] = ok;
    auto r = parse(j);
    EXPECT_TRUE(r.ok()) << ok << ": " << r.error().message();
  }
  const std::pair<const char*, const char*> bad[] = {
      {"ftp://h", "http:// or https://"},  {"HTTP://h", "http:// or https://"}, {"http://", "no host"},
      {"http:///x", "no host"},           {"http://:80", "no host"},           {"http://u:p@h", "user info"},
      {"http://h:0", "port"},             {"http://h:65536", "port"},          {"http://h:8x", "port"},
      {"http://h:", "empty port"},        {"http://h x", "printable ASCII"},   {"http://[::1", "IPv6"},
      {"http://[]:1", "IPv6"},            {"http://[::1]x", "IPv6"},           {"", "http:// or https://"},
  };
  for (const auto& [url, want] : bad) {
    Json j = openai();
    j["model"]["endpoint"] = url;
    expectRefused(parse(j), std::string("model.endpoint: |") + want, url);
  }
}

TEST(ParseManifest, ProviderRules) {
  refuseWith("/model/provider", "gpt", "model.provider: must be one of");
  refuseWith("/model/provider", 1, "model.provider: must be a string");
  refuseWith("/model/transcript", "../replay.json", "model.transcript: '../replay.json' has a '..' component");
  refuseWith("/model/transcript", "/tmp/replay.json", "model.transcript: '/tmp/replay.json' is absolute");
  refuseWith("/model/transcript", "a/./b.json", "model.transcript:");
  refuseWith("/model/transcript", "", "model.transcript: is empty");
  Json j = minimal();
  j["model"].erase("transcript");
  expectRefused(parse(j), "model.transcript: required for provider replay", "no transcript");
  j = minimal();
  j["model"].erase("provider");
  expectRefused(parse(j), "model.provider: required", "no provider");
  for (const char* p : {"openai", "ollama", "anthropic"}) {
    j = openai();
    j["model"]["provider"] = p;
    EXPECT_TRUE(parse(j).ok()) << p;
    j["model"].erase("endpoint");
    expectRefused(parse(j), "model.endpoint: required for provider", p);
    j = openai();
    j["model"]["provider"] = p;
    j["model"]["model"] = "";
    expectRefused(parse(j), "model.model: required", p);
    j["model"]["model"] = "m";
    j["model"]["transcript"] = "r.json";
    expectRefused(parse(j), "model.transcript: only for provider replay", p);
  }
  j = openai();
  j["model"]["model"] = std::string(257, 'm');
  expectRefused(parse(j), "model.model: must be a model name", "long model");
  j["model"]["model"] = "m\x01";
  expectRefused(parse(j), "model.model: must be a model name", "control model");
}

TEST(ParseManifest, ApiKeyEnvIsANameNeverAKey) {
  for (const char* bad : {"sk-abc123", "openai_api_key", "1KEY", "", "KEY NAME", "KEY=VALUE", "Key"})
    refuseWith("/model/api_key_env", bad, "model.api_key_env: must be the NAME of an environment variable");
  refuseWith("/model/api_key_env", 1, "model.api_key_env: must be a string");
  Json j = minimal();
  j["model"]["api_key_env"] = "_OPENAI_KEY_2";
  EXPECT_TRUE(parse(j).ok());
  // The refusal of a key-looking value does not echo it.
  j["model"]["api_key_env"] = "sk-live-corral-sentinel-7f3a";
  auto r = parse(j);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().find("sentinel"), std::string::npos) << r.error().message();
}

TEST(ParseManifest, RootAndRequiredFields) {
  for (const char* text : {"[]", "\"x\"", "1", "null", "true"})
    expectRefused(parseManifest(text), "manifest: $: must be a JSON object", text);
  expectRefused(parseManifest(""), "manifest: $: invalid JSON at byte", "empty");
  expectRefused(parseManifest("{"), "invalid JSON at byte", "{");
  expectRefused(parseManifest(std::string(kMinimal) + " x"), "invalid JSON at byte", "trailing junk");
  expectRefused(parseManifest(std::string(kMinimal) + "{}"), "invalid JSON", "two documents");
  expectRefused(parseManifest("{\"version\":1,/*c*/\"task\":\"t\"}"), "invalid JSON", "comment");
  for (const char* key : {"version", "task", "model"}) {
    Json j = minimal();
    j.erase(key);
    expectRefused(parse(j), std::string("manifest: ") + key + ": required", key);
  }
  for (const Json& v : {Json(2), Json(0), Json("1"), Json(1.0), Json(true), Json(-1)})
    refuseWith("/version", v, "manifest: version: must be 1");
}

TEST(ParseManifest, UnknownFieldsAreRefusedAtEveryLevel) {
  const std::pair<const char*, const char*> cases[] = {
      {"/extra", "manifest: extra: unknown field"},
      {"/model/temperature", "model.temperature: unknown field"},
      {"/budgets/max_tokens", "budgets.max_tokens: unknown field"},
      {"/sandbox/timeout", "sandbox.timeout: unknown field"},
      {"/network/deny", "network.deny: unknown field"},
      {"/credentials/0/token", "credentials[0].token: unknown field"},
  };
  for (const auto& [pointer, want] : cases) {
    Json j = minimal();
    if (std::string(pointer).rfind("/credentials", 0) == 0)
      j["credentials"] = Json::array({{{"name", "n"}, {"env", "E"}, {"url", "https://h"}}});
    j[Json::json_pointer(pointer)] = 1;
    expectRefused(parse(j), want, pointer);
  }
}

TEST(ParseManifest, WrongTypesAreRefused) {
  const std::tuple<const char*, Json, const char*> cases[] = {
      {"/task", 1, "task: must be a string"},
      {"/model", "openai", "model: must be a JSON object"},
      {"/inputs", "src/**", "inputs: must be an array of strings"},
      {"/inputs", Json::array({1}), "inputs[0]: must be a string"},
      {"/outputs", Json::object(), "outputs: must be an array"},
      {"/executables", Json::array({Json::array()}), "executables[0]: must be a name or an object"},
      {"/env", Json::object({{"A", "1"}}), "env: must be an array"},
      {"/network", Json::array(), "network: must be a JSON object"},
      {"/network/allow", "https://h", "network.allow: must be an array"},
      {"/credentials", Json::object(), "credentials: must be an array"},
      {"/credentials", Json::array({"x"}), "credentials[0]: must be a JSON object"},
      {"/budgets", Json::array(), "budgets: must be a JSON object"},
      {"/sandbox", nullptr, "sandbox: must be a JSON object"},
      {"/sandbox/allow_weaker", "memory", "sandbox.allow_weaker: must be an array"},
  };
  for (const auto& [pointer, value, want] : cases) refuseWith(pointer, value, want);
}

TEST(ParseManifest, TaskRules) {
  refuseWith("/task", "", "task: is empty");
  refuseWith("/task", " \n\t ", "task: is empty");
  refuseWith("/task", std::string(kMaxTaskBytes + 1, 'x'), "task: longer than 65536 bytes");
  refuseWith("/task", std::string("a\x01z"), "task: contains a control byte");
  refuseWith("/task", std::string("a\0z", 3), "task: contains a control byte");
  refuseWith("/task", "a\x7fz", "task: contains a control byte");
  Json j = minimal();
  j["task"] = std::string(kMaxTaskBytes, 'x');
  EXPECT_TRUE(parse(j).ok());
}

TEST(ParseManifest, InvalidUtf8IsRefusedWithThePath) {
  for (std::string bad : {"\xff", "\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80"}) {
    std::string text = R"({"version":1,"model":{"provider":"replay","transcript":"r"},"task":"caf)" + bad + "\"}";
    expectRefused(parseManifest(text), "manifest: task: invalid JSON", "raw bytes");
  }
  // An escaped lone surrogate is not UTF-8 either.
  expectRefused(parseManifest(R"({"version":1,"task":"\ud800"})"), "manifest: task: invalid JSON", "surrogate");
}

// nlohmann's lexer skips a byte order mark; a strict document has none (red team, session 12).
TEST(ParseManifest, AByteOrderMarkIsRefused) {
  const std::string text = R"({"version":1,"model":{"provider":"replay","transcript":"r"},"task":"t"})";
  ASSERT_TRUE(parseManifest(text).ok()) << "control";
  expectRefused(parseManifest("\xEF\xBB\xBF" + text), "manifest: $: starts with a UTF-8 byte order mark", "bom");
}

// nlohmann's lexer stops at a raw NUL: a second document or garbage after one was ignored.
TEST(ParseManifest, ARawNulAnywhereIsRefused) {
  const std::string text = R"({"version":1,"model":{"provider":"replay","transcript":"r"},"task":"t"})";
  for (const std::string& hostile : {text + std::string("\0", 1) + R"({"version":2})", text + std::string("\0garbage\xff", 9),
                                     std::string("\0", 1) + text, R"({"version":1,"task":"a)" + std::string("\0", 1) + "b\"}"}) {
    auto r = parseManifest(hostile);
    ASSERT_FALSE(r.ok()) << "accepted a NUL";
    EXPECT_NE(r.error().message().find("NUL"), std::string::npos) << r.error().message();
  }
}

TEST(ParseManifest, BudgetsRefuseEveryNonIntegerAndOutOfRange) {
  const std::pair<const char*, const char*> counts[] = {
      {"max_turns", "1..10000"},       {"max_model_calls", "1..100000"}, {"max_loops", "1..1000"},
      {"max_pending_tasks", "0..1000"},
  };
  const Json hostile[] = {Json(-1), Json::parse("1e30"), Json(1.5), Json(true), Json("10"), Json(nullptr),
                          Json::parse("18446744073709551616"), Json(100001), Json::parse("2.0")};
  for (const auto& [key, range] : counts) {
    for (const Json& v : hostile)
      refuseWith(std::string("/budgets/") + key, v, std::string("budgets.") + key + ": must be an integer in " + range);
    if (std::string(range).rfind("1..", 0) == 0)
      refuseWith(std::string("/budgets/") + key, 0, std::string("budgets.") + key + ": must be an integer in " + range);
  }
  refuseWith("/model/max_retries", 11, "model.max_retries: must be an integer in 0..10");
  refuseWith("/model/max_retries", -1, "model.max_retries: must be an integer in 0..10");
  refuseWith("/model/max_tokens", 0, "model.max_tokens: must be an integer in 1..1000000");
  refuseWith("/model/max_tokens", 1000001, "model.max_tokens: must be an integer in 1..1000000");
  refuseWith("/model/max_tokens", Json::parse("4096.0"), "model.max_tokens: must be an integer");
}

TEST(ParseManifest, DurationsNeedAUnitAndARange) {
  const std::tuple<const char*, Json, const char*> cases[] = {
      {"/budgets/wall_time", 600, "budgets.wall_time: must be a duration string in 1s..24h"},
      {"/budgets/wall_time", "600", "budgets.wall_time: must be a duration string"},
      {"/budgets/wall_time", "0.5s", "budgets.wall_time: must be a duration string in 1s..24h"},
      {"/budgets/wall_time", "25h", "budgets.wall_time:"},
      {"/budgets/wall_time", "0s", "budgets.wall_time:"},
      {"/budgets/wall_time", "-1s", "budgets.wall_time:"},
      {"/budgets/wall_time", "1e3s", "budgets.wall_time:"},
      {"/budgets/wall_time", "10 m", "budgets.wall_time:"},
      {"/budgets/wall_time", "10d", "budgets.wall_time:"},
      {"/budgets/command_timeout", "99ms", "budgets.command_timeout: must be a duration string in 100ms..1h"},
      {"/budgets/command_timeout", "61m", "budgets.command_timeout:"},
      {"/model/timeout", "999ms", "model.timeout: must be a duration string in 1s..10m"},
      {"/model/timeout", "11m", "model.timeout:"},
      {"/sandbox/cpu_time", "500ms", "sandbox.cpu_time: must be a duration string in 1s..24h"},
      {"/sandbox/cpu_time", true, "sandbox.cpu_time:"},
  };
  for (const auto& [pointer, value, want] : cases) refuseWith(pointer, value, want);
  Json j = minimal();
  j["budgets"] = {{"wall_time", "10s"}, {"command_timeout", "20s"}};
  expectRefused(parse(j), "budgets.command_timeout: must not exceed wall_time", "cmd > wall");
  // The default command_timeout (60s) also must fit a shorter wall_time.
  j["budgets"] = {{"wall_time", "30s"}};
  expectRefused(parse(j), "budgets.command_timeout: must not exceed wall_time", "default cmd > wall");
}

TEST(ParseManifest, SizesAreIntegersOrSuffixedStrings) {
  const std::tuple<const char*, Json, const char*> cases[] = {
      {"/budgets/max_output_bytes", "17M", "budgets.max_output_bytes: must be a size in 1..16M"},
      {"/budgets/max_output_bytes", 0, "budgets.max_output_bytes:"},
      {"/budgets/max_output_bytes", "0", "budgets.max_output_bytes:"},
      {"/budgets/max_output_bytes", "1.5K", "budgets.max_output_bytes:"},
      {"/budgets/max_output_bytes", -1, "budgets.max_output_bytes:"},
      {"/budgets/max_output_bytes", 1.5, "budgets.max_output_bytes:"},
      {"/budgets/max_output_bytes", true, "budgets.max_output_bytes:"},
      {"/sandbox/memory", "2T", "sandbox.memory: must be a size in 1..1T"},
      {"/sandbox/memory", "-1", "sandbox.memory:"},
      {"/sandbox/memory", Json::parse("1e30"), "sandbox.memory:"},
      {"/sandbox/memory", "64 M", "sandbox.memory:"},
      {"/sandbox/file_size", "", "sandbox.file_size:"},
      {"/sandbox/tmp_size", "99999999999999999999", "sandbox.tmp_size:"},
      {"/sandbox/workspace_size", Json::array(), "sandbox.workspace_size:"},
      {"/sandbox/pids", 0, "sandbox.pids: must be an integer in 1..1048576"},
      {"/sandbox/pids", 1048577, "sandbox.pids:"},
      {"/sandbox/pids", "256", "sandbox.pids:"},
  };
  for (const auto& [pointer, value, want] : cases) refuseWith(pointer, value, want);
}

TEST(ParseManifest, InputPatternsStayInTheWorkspace) {
  const std::pair<const char*, const char*> cases[] = {
      {"/etc/passwd", "is absolute"},
      {"../secrets", "has a '..' component"},
      {"src/../../x", "has a '..' component"},
      {"", "is empty"},
      {".", "has a '.' component"},
      {"./src", "has a '.' component"},
      {"a//b", "has an empty component"},
      {"src/", "has a trailing slash"},
      {".corral", "is under .corral/"},
      {".corral/trace.jsonl", "is under .corral/"},
      {".c*/trace.jsonl", "can match .corral/"},
      {".corra?", "can match .corral/"},
      {".CORRAL/x", "is under .corral/"},
      {".C*/trace.jsonl", "can match .corral/"},
      {".cOrRa?/x", "can match .corral/"},
      {".c*./x", "can match .corral/"},
      {"CORRAL~*/x", "can match .corral/"},
      {".corral\xe2\x80\x8b/x", "is under .corral/"},
      {"**/.corral/x", "can match .corral/"},
      {"**/.*", "can match .corral/"},
      {"a**", "'**' inside a component"},
      {"**b/c", "'**' inside a component"},
      {"a/***", "'**' inside a component"},
      {"a\x01z", "control character"},
  };
  for (const auto& [pattern, want] : cases)
    refuseWith("/inputs", Json::array({pattern}), std::string("inputs[0]: |") + want);
  refuseWith("/inputs", Json::array({"a", "a"}), "inputs[1]: repeats an earlier entry");
  refuseWith("/inputs", Json::array({std::string(4097, 'a')}), "inputs[0]:");
  refuseWith("/inputs", Json::array({std::string(256, 'a')}), "inputs[0]:");
  // A literal .corral below the top is an ordinary directory name.
  Json j = minimal();
  j["inputs"] = {"vendor/.corral/x", "src/**/.corral"};
  EXPECT_TRUE(parse(j).ok());
}

TEST(ParseManifest, OutputsAreExactWorkspacePaths) {
  const std::pair<const char*, const char*> cases[] = {
      {"/tmp/x", "is absolute"},         {"../x", "has a '..' component"}, {".corral/trace", "is under .corral/"},
      {".corral", "is under .corral/"},  {"src/*.py", "is a glob"},        {"src/fix?.py", "is a glob"},
      {"", "is empty"},                  {"a/./b", "has a '.' component"},
  };
  for (const auto& [path, want] : cases)
    refuseWith("/outputs", Json::array({path}), std::string("outputs[0]: |") + want);
  refuseWith("/outputs", Json::array({"a", "b", "a"}), "outputs[2]: repeats an earlier entry");
}

TEST(ParseManifest, ExecutablesAreBasenames) {
  const std::pair<std::string, const char*> cases[] = {
      {"/usr/bin/python3", "is a path"}, {"bin/python3", "is a path"}, {"./python3", "is a path"},
      {".", "is not a program name"},   {"..", "is not a program name"}, {"", "is empty"},
      {"-rf", "starts with '-'"},       {"py;rm", "has a character outside"},
      {"py thon", "has a character outside"}, {"a$b", "has a character outside"}, {"a`b`", "has a character outside"},
      {"a|b", "has a character outside"}, {std::string("a\0b", 3), "has a character outside"},
      {"caf\u00e9", "has a character outside"}, {std::string(256, 'x'), "longer than 255 bytes"},
  };
  for (const auto& [name, want] : cases)
    refuseWith("/executables", Json::array({name}), std::string("executables[0]: |") + want);
  refuseWith("/executables", Json::array({"git", "git"}), "executables[1]: repeats an earlier entry");
  Json j = minimal();
  j["executables"] = {std::string(255, 'x')};
  EXPECT_TRUE(parse(j).ok());
}

TEST(ParseManifest, EnvEntriesAreNamedAndNeverEchoValues) {
  const std::pair<std::string, const char*> cases[] = {
      {"NOEQUALS", "expected KEY=VALUE"},
      {"=value", "not a variable name"},
      {"1A=v", "not a variable name"},
      {"A-B=v", "not a variable name"},
      {"LD_PRELOAD=/tmp/x.so", "'LD_PRELOAD' may not be set"},
      {"LD_LIBRARY_PATH=/tmp", "'LD_LIBRARY_PATH' may not be set"},
      {"LD_AUDIT=/tmp/a.so", "'LD_AUDIT' may not be set"},
      {"LD_BIND_NOW=1", "'LD_BIND_NOW' may not be set"},
      {"HOME=/root", "'HOME' may not be set"},
      {"PATH=/workspace/bin", "'PATH' may not be set"},
      {std::string("A=x\0y", 5), "contains a NUL byte"},
  };
  for (const auto& [entry, want] : cases) refuseWith("/env", Json::array({entry}), std::string("env[0]: |") + want);
  refuseWith("/env", Json::array({"A=1", "A=2"}), "env[1]: 'A' is set twice");
  // A value that is a secret never appears in a refusal.
  const std::string secret = "corral-sentinel-7f3a";
  for (const std::string& entry : {"sk-" + secret, "LD_PRELOAD=" + secret, "A=" + secret + std::string("\0", 1)}) {
    Json j = minimal();
    j["env"] = {"A=" + secret, entry};
    auto r = parse(j);
    ASSERT_FALSE(r.ok()) << entry;
    EXPECT_EQ(r.error().message().find(secret), std::string::npos) << r.error().message();
  }
  Json j = minimal();
  j["env"] = {"A=" + secret, "A=" + secret};
  auto r = parse(j);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().find(secret), std::string::npos) << r.error().message();
}

TEST(ParseManifest, NetworkGrantsAreCanonicalisedAndCheckedWithoutEchoingThem) {
  Json j = Json::parse(kFull);
  j["network"]["allow"] = {"HTTPS://PyPI.org", "http://*.example.com:8080", "http://127.0.0.1:9/"};
  auto m = parse(j);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->network.allow, (std::vector<std::string>{"https://pypi.org:443", "http://*.example.com:8080", "http://127.0.0.1:9"}));
  refuseWith("/network/allow", Json::array({1}), "network.allow[0]: must be a string");
  refuseWith("/network/allow", Json::array({"https://a.com", "https://A.com:443"}),
             "manifest: network.allow[1]: https://a.com:443 is granted twice");
  const std::string secret = "corral-sentinel-grant-91";
  for (const std::string& bad : {"https://u:" + secret + "@h.com", "https://h.com/?k=" + secret, "ftp://" + secret,
                                 "https://" + secret + ":99999", "https://*" + secret}) {
    Json k = Json::parse(kFull);
    k["network"]["allow"] = {bad};
    auto r = parse(k);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message().find(secret), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("network.allow[0]: "), std::string::npos) << r.error().message();
  }
}

TEST(ParseManifest, NetworkInternalCidrsAreCanonicalAndNeedAGrant) {
  Json j = Json::parse(kFull);
  j["network"]["allow"] = {"https://registry.corp.example"};
  j["network"]["internal"] = {"10.20.0.0/16", "FD00::/8", "169.254.169.254/32"};
  auto m = parse(j);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->network.internal, (std::vector<std::string>{"10.20.0.0/16", "fd00::/8", "169.254.169.254/32"}));
  // The CIDRs are part of the canonical form, and parse back to the same manifest.
  const std::string canonical = manifestToCanonicalJson(*m);
  EXPECT_NE(canonical.find(R"("internal":["10.20.0.0/16","fd00::/8","169.254.169.254/32"])"), std::string::npos) << canonical;
  auto again = parseManifest(canonical);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(*again, *m);
  refuseWith("/network/internal", "10.0.0.0/8", "network.internal: must be an array");
  refuseWith("/network/internal", Json::array({8}), "network.internal[0]: must be a string");
  refuseWith("/network/internal", Json::array({"10.0.0.1/8"}), "network.internal[0]: internal CIDR '10.0.0.1/8': has host bits set");
  refuseWith("/network/internal", Json::array({"10/8"}), "network.internal[0]: internal CIDR '10/8'");
  refuseWith("/network/internal", Json::array({"10.0.0.0"}), "needs a prefix length");
  refuseWith("/network/internal", Json::array({std::string(200, '1') + "/8"}), "network.internal[0]: is no CIDR (longer than 64 bytes)");
  refuseWith("/network/internal", Json::array({"fd00::/8", "FD00::/8"}), "network.internal[1]: fd00::/8 is given twice");
  // A CIDR without a grant opens nothing: refused rather than silently useless.
  Json no_grant = Json::parse(kFull);
  no_grant["network"] = {{"allow", Json::array()}, {"internal", {"10.0.0.0/8"}}};
  auto r = parse(no_grant);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("network.internal: needs a grant in network.allow"), std::string::npos) << r.error().message();
}

TEST(CanonicalJson, ManifestWithoutInternalCidrsKeepsItsEarlierForm) {
  auto r = parseManifest(kMinimal);
  ASSERT_TRUE(r.ok());
  EXPECT_NE(manifestToCanonicalJson(*r).find(R"("network":{"allow":[]})"), std::string::npos);
}

TEST(ParseManifest, CredentialsAreParsedForShape) {
  Json cred = {{"name", "gh"}, {"env", "GH_TOKEN"}, {"url", "https://api.github.com"}};
  Json j = minimal();
  j["credentials"] = Json::array({cred});
  auto m = parse(j);
  ASSERT_TRUE(m.ok()) << m.error().message();
  ASSERT_EQ(m->credentials.size(), 1u);
  EXPECT_EQ(m->credentials[0].env, "GH_TOKEN");
  EXPECT_EQ(m->credentials[0].header, "Authorization");
  for (const char* key : {"name", "env", "url"}) {
    Json c = cred;
    c.erase(key);
    refuseWith("/credentials", Json::array({c}), std::string("credentials[0].") + key + ": required");
  }
  Json c = cred;
  c["header"] = 1;
  refuseWith("/credentials", Json::array({c}), "credentials[0].header: must be a string");
}

TEST(ParseManifest, AllowWeakerTakesTheExecLimitNames) {
  refuseWith("/sandbox/allow_weaker", Json::array({"cpu_time"}), "sandbox.allow_weaker[0]: 'cpu_time' is not a limit");
  refuseWith("/sandbox/allow_weaker", Json::array({"everything"}), "is not a limit");
  refuseWith("/sandbox/allow_weaker", Json::array({"memory", "memory"}), "allow_weaker[1]: repeats");
}

TEST(ParseManifest, DuplicateKeysAreRefusedWithTheirPath) {
  expectRefused(parseManifest(R"({"version":1,"task":"a","task":"b","model":{"provider":"replay","transcript":"r"}})"),
                "manifest: task: duplicate key", "top-level");
  expectRefused(
      parseManifest(R"({"version":1,"task":"a","model":{"provider":"replay","transcript":"r"},)"
                    R"("budgets":{"max_turns":1,"max_turns":9999}})"),
      "manifest: budgets.max_turns: duplicate key", "nested");
  expectRefused(parseManifest(R"({"version":1,"credentials":[{"name":"a","name":"b"}]})"),
                "manifest: credentials[0].name: duplicate key", "in array");
}

TEST(ParseManifest, SizeLimitIsEnforcedBeforeParsing) {
  Json j = minimal();
  j["task"] = std::string(2 << 20, 'x');
  expectRefused(parse(j), "manifest: $: larger than 1048576 bytes", "2 MiB");
  // Exactly at the limit is parsed (and then refused for its own reasons, not its size).
  std::string text = kMinimal;
  text.insert(text.size() - 1, std::string(kMaxManifestBytes - text.size(), ' '));
  ASSERT_EQ(text.size(), kMaxManifestBytes);
  EXPECT_TRUE(parseManifest(text).ok());
}

TEST(ParseManifest, DeepNestingIsRefusedWithoutRecursion) {
  for (const std::string& open : {std::string("["), std::string("{\"a\":")}) {
    std::string text;
    for (int i = 0; i < 100000; ++i) text += open;
    expectRefused(parseManifest(text), "nested deeper than 16 levels", open);
  }
  std::string deep = "{\"version\":1,\"x\":" + std::string(200, '[') + std::string(200, ']') + "}";
  expectRefused(parseManifest(deep), "nested deeper than 16 levels", "inside a field");
}

TEST(ParseManifest, HostileKeysAndValuesAreEchoedShortAndPrintable) {
  Json j = minimal();
  j[std::string(5000, 'k') + "\n\x1b[31m"] = 1;
  auto r = parse(j);
  expectRefused(r, "unknown field", "long key");
  j = minimal();
  j["x\ny"] = 1;
  expectRefused(parse(j), "manifest: 'x\\x0ay': unknown field", "newline key");
  j = minimal();
  j["executables"] = {std::string(200, 'z') + "/x"};
  r = parse(j);
  expectRefused(r, "is a path", "long path");
  EXPECT_LT(r.error().message().size(), 200u) << r.error().message();
}

TEST(ParseManifest, ListsAreCapped) {
  Json many = Json::array();
  for (size_t i = 0; i <= kMaxListEntries; ++i) many.push_back("f" + std::to_string(i));
  refuseWith("/inputs", many, "inputs: more than 1024 entries");
  refuseWith("/outputs", many, "outputs: more than 1024 entries");
  many.erase(many.begin());
  Json j = minimal();
  j["outputs"] = many;
  EXPECT_TRUE(parse(j).ok());
}

TEST(CanonicalJson, MinimalManifestIsSortedCompactAndComplete) {
  auto r = parseManifest(kMinimal);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(manifestToCanonicalJson(*r),
            R"({"budgets":{"command_timeout":"60000ms","max_loops":4,"max_model_calls":40,"max_output_bytes":65536,)"
            R"("max_pending_tasks":2,"max_turns":20,"wall_time":"600000ms"},"credentials":[],"env":[],)"
            R"("executables":[],"inputs":[],"model":{"max_retries":2,"max_tokens":4096,"provider":"replay",)"
            R"("timeout":"60000ms","transcript":"replay.json"},"network":{"allow":[]},"outputs":[],)"
            R"("sandbox":{"allow_weaker":[]},"task":"fix the bug","version":1})");
}

TEST(CanonicalJson, RoundTripsToAnEqualManifest) {
  Json with_optional = Json::parse(kFull);
  with_optional["sandbox"].erase("memory");
  with_optional["model"].erase("api_key_env");
  for (const std::string& text : {std::string(kMinimal), std::string(kFull), with_optional.dump(), openai().dump()}) {
    auto first = parseManifest(text);
    ASSERT_TRUE(first.ok()) << first.error().message();
    const std::string canonical = manifestToCanonicalJson(*first);
    auto second = parseManifest(canonical);
    ASSERT_TRUE(second.ok()) << second.error().message() << "\n" << canonical;
    EXPECT_EQ(*second, *first) << canonical;
    EXPECT_EQ(manifestToCanonicalJson(*second), canonical);
    EXPECT_EQ(Json::parse(canonical).dump(), canonical) << "not compact with sorted keys";
  }
}

TEST(CanonicalJson, SameManifestWrittenDifferentlyIsTheSameString) {
  auto a = parseManifest(R"({"task":"t","version":1,"model":{"transcript":"r","provider":"replay"},
                             "budgets":{"wall_time":"10m","max_output_bytes":"64K"}})");
  auto b = parseManifest(R"({"version":1,"task":"t","model":{"provider":"replay","transcript":"r"},
                             "budgets":{"wall_time":"600s","max_output_bytes":65536},"sandbox":{}})");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(manifestToCanonicalJson(*a), manifestToCanonicalJson(*b));
}

// The documentation files sit beside the source tree; the test walks up from its working
// directory (the build tree lives inside the source tree) to find them.
std::filesystem::path sourceRoot() {
  for (auto dir = std::filesystem::current_path(); !dir.empty(); dir = dir.parent_path()) {
    if (std::filesystem::exists(dir / "src/policy/manifest.h") && std::filesystem::exists(dir / "docs")) return dir;
    if (dir == dir.parent_path()) break;
  }
  return {};
}

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ManifestDocs, ExampleManifestsParse) {
  auto root = sourceRoot();
  if (root.empty()) GTEST_SKIP() << "source tree not found above " << std::filesystem::current_path();
  int seen = 0;
  for (const auto& e : std::filesystem::directory_iterator(root / "examples/manifests")) {
    // Replay transcripts sit beside the manifests that name them.
    if (e.path().extension() != ".json" || e.path().string().ends_with(".transcript.json")) continue;
    ++seen;
    auto r = parseManifest(readFile(e.path()));
    EXPECT_TRUE(r.ok()) << e.path() << ": " << r.error().message();
  }
  EXPECT_GE(seen, 2);
}

// Every object in the schema closes itself: the parser refuses unknown fields everywhere.
void expectClosedObjects(const Json& schema, const std::string& where) {
  if (schema.is_object()) {
    if (schema.value("type", "") == "object") {
      EXPECT_EQ(schema.value("additionalProperties", true), false) << where;
    }
    for (const auto& [k, v] : schema.items()) expectClosedObjects(v, where + "/" + k);
  } else if (schema.is_array()) {
    for (size_t i = 0; i < schema.size(); ++i) expectClosedObjects(schema[i], where + "/" + std::to_string(i));
  }
}

TEST(ManifestDocs, SchemaIsJsonAndClosesEveryObject) {
  auto root = sourceRoot();
  if (root.empty()) GTEST_SKIP() << "source tree not found above " << std::filesystem::current_path();
  Json schema = Json::parse(readFile(root / "docs/manifest.schema.json"), nullptr, false);
  ASSERT_FALSE(schema.is_discarded()) << "docs/manifest.schema.json is not JSON";
  EXPECT_EQ(schema.value("$schema", ""), "https://json-schema.org/draft/2020-12/schema");
  expectClosedObjects(schema, "");
  // The schema names the same top-level fields the parser knows.
  std::vector<std::string> keys;
  for (const auto& [k, v] : schema.at("properties").items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"budgets", "credentials", "env", "executables", "inputs", "model",
                                            "network", "outputs", "sandbox", "task", "version"}));
}

}  // namespace
}  // namespace corral::policy

namespace corral::policy {
namespace {

TEST(ParseManifestLiteralArgs, MarkedExecutablesParseRoundTripAndNarrow) {
  Json j = minimal();
  j["executables"] = Json::array({"git", {{"name", "python3"}, {"literal_args", true}}, {{"name", "ls"}, {"literal_args", false}}});
  auto m = parse(j);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->executables, (std::vector<std::string>{"git", "python3", "ls"}));
  EXPECT_EQ(m->literal_args, (std::vector<std::string>{"python3"}));
  const std::string canon = manifestToCanonicalJson(*m);
  EXPECT_NE(canon.find(R"("executables":["git",{"literal_args":true,"name":"python3"},"ls"])"), std::string::npos) << canon;
  auto again = parseManifest(canon);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(*again, *m);
}

TEST(ParseManifestLiteralArgs, BadShapesAreRefused) {
  refuseWith("/executables", Json::array({{{"name", "python3"}, {"literal_args", 1}}}), "literal_args|must be true or false");
  refuseWith("/executables", Json::array({{{"name", "python3"}, {"shell", true}}}), "unknown field");
  refuseWith("/executables", Json::array({{{"literal_args", true}}}), "name|required");
  refuseWith("/executables", Json::array({{{"name", "/usr/bin/python3"}, {"literal_args", true}}}), "is a path");
  refuseWith("/executables", Json::array({{{"name", "git"}, {"literal_args", true}}}), "git has its own gate");
  refuseWith("/executables", Json::array({"python3", {{"name", "python3"}, {"literal_args", true}}}), "repeats an earlier entry");
  refuseWith("/executables", Json::array({7}), "must be a name");
}

}  // namespace
}  // namespace corral::policy

namespace corral::policy {
namespace {

TEST(ParseManifestVmBackend, ParsesRoundTripsAndKeepsNamespaceCanonicalUnchanged) {
  Json j = minimal();
  j["sandbox"] = {{"backend", "vm"}, {"vm", {{"memory", "256M"}, {"cpus", 2}}}, {"allow_weaker", {"kvm", "memory"}}, {"memory", "128M"}};
  auto m = parse(j);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->sandbox.backend, "vm");
  EXPECT_EQ(m->sandbox.vm_memory_bytes, 256ull << 20);
  EXPECT_EQ(m->sandbox.vm_cpus, 2u);
  const std::string canon = manifestToCanonicalJson(*m);
  EXPECT_NE(canon.find(R"("backend":"vm")"), std::string::npos) << canon;
  auto again = parseManifest(canon);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(*again, *m);
  // Control: a manifest without the field has no backend in its canonical form, and an
  // explicit "namespace" is the same manifest.
  auto plain = parse(minimal());
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(manifestToCanonicalJson(*plain).find("backend"), std::string::npos);
  Json ns = minimal();
  ns["sandbox"] = {{"backend", "namespace"}};
  auto nsm = parse(ns);
  ASSERT_TRUE(nsm.ok()) << nsm.error().message();
  EXPECT_EQ(*nsm, *plain);
}

TEST(ParseManifestVmBackend, WhatTheVmCannotHonourIsRefusedAtLoad) {
  refuseWith("/sandbox", {{"backend", "kvm"}}, "sandbox.backend: must be namespace or vm");
  refuseWith("/sandbox", {{"vm", {{"cpus", 1}}}}, "sandbox.vm: only with backend vm");
  refuseWith("/sandbox", {{"allow_weaker", {"kvm"}}}, "sandbox.allow_weaker[0]: kvm only with backend vm");
  refuseWith("/sandbox", {{"backend", "vm"}, {"vm", {{"memory", "64M"}}}}, "sandbox.vm.memory");
  refuseWith("/sandbox", {{"backend", "vm"}, {"vm", {{"cpus", 65}}}}, "sandbox.vm.cpus");
  refuseWith("/sandbox", {{"backend", "vm"}, {"vm", {{"disk", 1}}}}, "sandbox.vm|unknown field");
  refuseWith("/sandbox", {{"backend", "vm"}, {"memory", "1G"}}, "sandbox.memory: larger than the VM (sandbox.vm.memory 512M)");
  refuseWith("/sandbox", {{"backend", "vm"}, {"workspace_size", "4M"}}, "sandbox.workspace_size: the VM's workspace disk needs at least 8M");
  Json net = minimal();
  net["sandbox"] = {{"backend", "vm"}};
  net["network"] = {{"allow", {"https://pypi.org"}}};
  expectRefused(parse(net), "network.allow: not available with sandbox.backend vm", "vm + network");
  Json cred = minimal();
  cred["sandbox"] = {{"backend", "vm"}};
  cred["credentials"] = Json::array({{{"name", "gh"}, {"env", "GH_TOKEN"}, {"url", "https://api.github.com"}}});
  expectRefused(parse(cred), "credentials: not available with sandbox.backend vm", "vm + credentials");
}

}  // namespace
}  // namespace corral::policy
