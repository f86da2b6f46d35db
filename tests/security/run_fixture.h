// SPDX-License-Identifier: Apache-2.0
// `corral run` test fixture: a workspace, a manifest and a replay transcript written as
// JSON, one run of the real binary, and the resulting trace parsed for assertions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace corral::testing {

// One tool call in a replay transcript.
nlohmann::json call(const std::string& name, nlohmann::json arguments);
nlohmann::json rawCall(const std::string& name, const std::string& raw_arguments);

class RunFixture {
 public:
  RunFixture();
  TempDir ws{"run"};
  // Defaults: replay provider with transcript.json, inputs {"*.py","*.txt"}, outputs
  // {"out.txt"}, executables {"python3"}, small budgets. Tests edit it before run().
  nlohmann::json manifest;
  std::vector<nlohmann::json> replies;

  // Appends a reply holding these tool calls.
  void reply(std::vector<nlohmann::json> calls, const std::string& content = "");
  // Writes manifest.json + transcript.json into the workspace (unless already written) and
  // runs `corral run manifest.json --json FLAGS...` (FLAGS default: --apply).
  RunResult run(std::vector<std::string> flags = {"--apply"}, const RunOptions& opts = {});
  void writeFiles() const;

  std::vector<nlohmann::json> trace() const;  // every entry
  std::vector<nlohmann::json> entries(const std::string& type) const;
  std::vector<nlohmann::json> toolCalls() const;  // data of each tool_call entry, in order
  nlohmann::json result() const;                  // result.json (null when absent)
  std::string allRecordBytes() const;             // every file under .corral, concatenated
};

// The JSON summary `corral run --json` prints (stdout's last line), or null.
nlohmann::json runJson(const RunResult& r);

}  // namespace corral::testing
