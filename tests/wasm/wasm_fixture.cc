// SPDX-License-Identifier: Apache-2.0
// The wasm claim tests' harness.
#include "wasm_fixture.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace corral::testing::wasm {

std::string guestModule(const std::string& name) {
  const std::string path = std::string(CORRAL_WASM_GUESTS) + "/" + name;
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? path : "";
}

std::string testCache() {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/corral-wasm-test-cache-" + std::to_string(::geteuid());
}

RunResult runWasm(const std::vector<std::string>& opts, const std::string& module, const std::vector<std::string>& args,
                  const RunOptions& run_opts) {
  return runWasmWith(corralBin(), opts, module, args, run_opts);
}

RunResult runWasmWith(const std::string& bin, const std::vector<std::string>& opts, const std::string& module,
                      const std::vector<std::string>& args, const RunOptions& run_opts) {
  std::vector<std::string> argv{bin, "wasm", "run", "--json"};
  if (std::find(opts.begin(), opts.end(), "--cache") == opts.end()) argv.insert(argv.end(), {"--cache", testCache()});
  argv.insert(argv.end(), opts.begin(), opts.end());
  argv.push_back(module);
  argv.push_back("--");
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, run_opts);
}

RunResult compileWasm(const std::vector<std::string>& opts, const std::string& module, const std::string& cache) {
  std::vector<std::string> argv{corralBin(), "wasm", "compile", "--cache", cache};
  argv.insert(argv.end(), opts.begin(), opts.end());
  argv.push_back(module);
  return run(argv);
}

std::string coreBin() {
  const std::string c = corralBin();
  return c.substr(0, c.rfind('/') + 1) + "corral-core";
}

StubCore::StubCore() : dir_("wasm-stub-core") {
  const std::string build = corralBin().substr(0, corralBin().rfind('/') + 1);
  std::error_code ec;
  for (const char* bin : {"corral", "corral-wasm-guest"}) {
    std::filesystem::copy_file(build + bin, dir_ / bin, ec);
    if (ec) return;
    if (::chmod((dir_ / bin).c_str(), 0755) != 0) return;
  }
  dir_.write("corral-core", std::string("#!/bin/sh\necho '") + kStubCoreLine + "' >&2\nexit " + std::to_string(kStubCoreExit) + "\n",
             0755);
  ok_ = true;
}

bool handedOff(const RunResult& r) {
  return r.exit_code == kStubCoreExit && r.err.find(kStubCoreLine) != std::string::npos;
}

std::string withoutMeasurements(const std::string& err) {
  std::string out;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::ordered_json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("wall_ms")) {
      for (const char* k : {"wall_ms", "cpu_user_ms", "cpu_sys_ms", "peak_memory_bytes"}) j[k] = 0;
      line = j.dump();
    }
    out += line + "\n";
  }
  return out;
}

::testing::AssertionResult wasmRefused(const RunResult& r, const std::string& why) {
  const std::vector<std::string> lines = r.stderrLines();
  if (r.exit_code != 125) return ::testing::AssertionFailure() << "expected exit 125" << r.describe();
  if (lines.size() != 1 || lines[0].rfind("corral: ", 0) != 0)
    return ::testing::AssertionFailure() << "expected one stderr line starting 'corral: '" << r.describe();
  if (lines[0].find(why) == std::string::npos)
    return ::testing::AssertionFailure() << "expected the refusal to say '" << why << "'" << r.describe();
  if (!r.out.empty()) return ::testing::AssertionFailure() << "the guest ran" << r.describe();
  return ::testing::AssertionSuccess();
}

std::vector<std::string> linesStartingWith(const std::string& out, const std::string& prefix) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) lines.push_back(line);
  return lines;
}

std::string writeModule(const TempDir& dir, const std::string& name, const std::string& bytes) {
  dir.write(name, bytes);
  return dir / name;
}

HttpUpstream::HttpUpstream() {
  RunOptions o;
  o.stdin_pipe = true;
  o.deadline = std::chrono::minutes(10);
  proc_.emplace(Process::start({"/usr/bin/python3", std::string(CORRAL_SOURCE_DIR) + "/tests/wasm/http_upstream.py"}, o));
  auto line = proc_->readLine(std::chrono::seconds(30));
  if (!line) return;
  auto j = nlohmann::json::parse(*line, nullptr, false);
  if (!j.is_object()) return;
  main = j.value("main", 0);
  other = j.value("other", 0);
}

HttpUpstream::~HttpUpstream() {
  if (proc_) {
    proc_->closeStdin();
    proc_->exitedWithin(std::chrono::seconds(5));
  }
}

int HttpUpstream::count() const {
  RunResult r = run({"/usr/bin/curl", "-sS", "--noproxy", "*", "--max-time", "10", url("/__count")});
  return r.exit_code == 0 && !r.out.empty() ? std::stoi(r.out) : -1;
}

bool hasProxyRefusalLine(const RunResult& r) {
  for (const std::string& l : r.stderrLines())
    if (l.find("event=egress") != std::string::npos && l.find("decision=refuse") != std::string::npos) return true;
  return false;
}

std::vector<std::string> egressDecisions(const RunResult& r) {
  std::vector<std::string> out;
  if (!r.report || !r.report->contains("egress") || !(*r.report)["egress"].is_array()) return out;
  for (const auto& e : (*r.report)["egress"]) out.push_back(e.value("decision", ""));
  return out;
}

}  // namespace corral::testing::wasm
