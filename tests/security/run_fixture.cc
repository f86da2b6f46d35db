// SPDX-License-Identifier: Apache-2.0
#include "run_fixture.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace corral::testing {

using nlohmann::json;

json call(const std::string& name, json arguments) { return {{"name", name}, {"arguments", std::move(arguments)}}; }
json rawCall(const std::string& name, const std::string& raw) { return {{"name", name}, {"arguments_raw", raw}}; }

RunFixture::RunFixture() {
  manifest = {{"version", 1},
              {"task", "test task"},
              {"model", {{"provider", "replay"}, {"transcript", "transcript.json"}}},
              {"inputs", {"*.py", "*.txt"}},
              {"outputs", {"out.txt"}},
              {"executables", {"python3"}},
              {"budgets",
               {{"max_turns", 20}, {"max_model_calls", 30}, {"wall_time", "2m"}, {"command_timeout", "20s"},
                {"max_output_bytes", "16K"}, {"max_loops", 2}, {"max_pending_tasks", 1}}}};
}

void RunFixture::reply(std::vector<json> calls, const std::string& content) {
  replies.push_back({{"content", content}, {"tool_calls", calls}, {"usage", {{"input_tokens", 10}, {"output_tokens", 5}}}});
}

void RunFixture::writeFiles() const {
  ws.write("manifest.json", manifest.dump(2));
  ws.write("transcript.json", json{{"version", 1}, {"replies", replies}}.dump());
}

RunResult RunFixture::run(std::vector<std::string> flags, const RunOptions& opts) {
  writeFiles();
  std::vector<std::string> argv = {corralBin(), "run", ws / "manifest.json", "--json"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  RunOptions o = opts;
  if (o.deadline == std::chrono::milliseconds(60'000)) o.deadline = std::chrono::milliseconds(120'000);
  return corral::testing::run(argv, o);
}

std::vector<json> RunFixture::trace() const {
  std::vector<json> out;
  std::istringstream in(ws.read(".corral/trace.jsonl"));
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    out.push_back(json::parse(line, nullptr, false));
  }
  return out;
}

std::vector<json> RunFixture::entries(const std::string& type) const {
  std::vector<json> out;
  for (const json& e : trace())
    if (e.is_object() && e.value("type", "") == type) out.push_back(e["data"]);
  return out;
}

std::vector<json> RunFixture::toolCalls() const { return entries("tool_call"); }

json RunFixture::result() const {
  std::string r = ws.read(".corral/result.json");
  return r.empty() ? json() : json::parse(r, nullptr, false);
}

std::string RunFixture::allRecordBytes() const {
  std::string all;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(ws / ".corral", ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    std::ifstream f(it->path(), std::ios::binary);
    all += std::string(std::istreambuf_iterator<char>(f), {});
  }
  return all;
}

json runJson(const RunResult& r) {
  std::istringstream in(r.out);
  json last;
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    if (j.is_object()) last = j;
  }
  return last;
}

}  // namespace corral::testing
