// SPDX-License-Identifier: Apache-2.0
// Tests for the JSON run report: keys, nulls, and that it parses back.
#include "cli/report_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace corral::cli {
namespace {

using nlohmann::json;
using sandbox::Limit;
using sandbox::OutputResult;

sandbox::RunReport fullReport() {
  sandbox::RunReport r;
  r.exit_code = 137;
  r.command_status = std::nullopt;
  r.signal = 9;
  r.killed_by = sandbox::KilledBy::kMemory;
  r.wall_ms = 12.5;
  r.cpu_user_ms = 3.25;
  r.cpu_sys_ms = 1;
  r.peak_memory_bytes = 64ull << 20;
  r.cgroup = "v2";
  r.landlock_abi = 4;
  r.limits = {{Limit::kMemory, 64ull << 20, "cgroup-v2"},
              {Limit::kTimeout, std::nullopt, "none"},
              {Limit::kWorkspaceSize, 1ull << 30, "tmpfs"}};
  r.outputs = {{"out/a.txt", OutputResult::Status::kCopied, "", 42},
               {"gone", OutputResult::Status::kMissing, "", 0},
               {"link", OutputResult::Status::kRefused, "symlink", 0}};
  r.error = "";
  return r;
}

TEST(RenderReport, IsOneLineAndParsesBackWithEveryKey) {
  std::string text = renderReport(fullReport());
  EXPECT_EQ(text.find('\n'), std::string::npos);
  json j = json::parse(text);
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["exit_code"], 137);
  EXPECT_TRUE(j["command_status"].is_null());
  EXPECT_EQ(j["signal"], 9);
  EXPECT_EQ(j["killed_by"], "memory");
  EXPECT_EQ(j["wall_ms"], 12.5);
  EXPECT_EQ(j["cpu_user_ms"], 3.25);
  EXPECT_EQ(j["cpu_sys_ms"], 1.0);
  EXPECT_EQ(j["peak_memory_bytes"], 64ull << 20);
  EXPECT_EQ(j["cgroup"], "v2");
  EXPECT_EQ(j["landlock_abi"], 4);
  EXPECT_EQ(j["limits"]["memory"], (json{{"value", 64ull << 20}, {"mechanism", "cgroup-v2"}}));
  EXPECT_TRUE(j["limits"]["timeout"]["value"].is_null());
  EXPECT_EQ(j["limits"]["timeout"]["mechanism"], "none");
  EXPECT_EQ(j["limits"]["workspace-size"]["mechanism"], "tmpfs");
  EXPECT_EQ(j["limits"].size(), 3u);
  ASSERT_EQ(j["outputs"].size(), 3u);
  EXPECT_EQ(j["outputs"][0], (json{{"path", "out/a.txt"}, {"status", "copied"}, {"reason", ""}, {"bytes", 42}}));
  EXPECT_EQ(j["outputs"][1]["status"], "missing");
  EXPECT_EQ(j["outputs"][2]["status"], "refused");
  EXPECT_EQ(j["outputs"][2]["reason"], "symlink");
  EXPECT_FALSE(j.contains("error")) << "error must be omitted when empty";
  EXPECT_EQ(j.size(), 13u) << text;
}

TEST(RenderReport, ExitedCommandHasStatusAndNullSignal) {
  sandbox::RunReport r;
  r.exit_code = 3;
  r.command_status = 3;
  r.cgroup = "none";
  json j = json::parse(renderReport(r));
  EXPECT_EQ(j["command_status"], 3);
  EXPECT_TRUE(j["signal"].is_null());
  EXPECT_TRUE(j["peak_memory_bytes"].is_null());
  EXPECT_EQ(j["killed_by"], "none");
  EXPECT_TRUE(j["limits"].is_object());
  EXPECT_TRUE(j["outputs"].is_array());
}

TEST(RenderReport, ErrorIsIncludedWhenSet) {
  sandbox::RunReport r;
  r.error = "mount /proc: Operation not permitted";
  json j = json::parse(renderReport(r));
  EXPECT_EQ(j["exit_code"], 125);
  EXPECT_EQ(j["error"], "mount /proc: Operation not permitted");
}

// Output names are chosen by the sandboxed command: hostile bytes must neither break the
// line, nor the JSON, nor make rendering throw.
TEST(RenderReport, HostileStringsStayOneLineOfValidJson) {
  sandbox::RunReport r = fullReport();
  r.outputs[0].path = std::string("a\n\"}\0b\xff\xfe", 9);
  r.error = "line1\nline2\t\x01";
  std::string text = renderReport(r);
  EXPECT_EQ(text.find('\n'), std::string::npos);
  json j = json::parse(text);
  EXPECT_EQ(j["error"], "line1\nline2\t\x01");
  std::string path = j["outputs"][0]["path"];
  EXPECT_EQ(path.substr(0, 6), std::string("a\n\"}\0b", 6));
  EXPECT_NE(path.find("\xef\xbf\xbd"), std::string::npos) << "invalid UTF-8 not replaced";
}

}  // namespace
}  // namespace corral::cli
