// SPDX-License-Identifier: Apache-2.0
// RunContext::record: an entry that outgrows a trace line is recorded by size and hash, so no
// input can leave a run unsealed.
#include "agent/run_state.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/sha256.h"

namespace corral::agent {
namespace {

struct Workspace {
  std::string path;
  Workspace() {
    char tmpl[] = "/tmp/corral-run-state-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~Workspace() { std::filesystem::remove_all(path); }
};

TEST(RunContextRecord, AnEntryOverTheLineLimitIsRecordedByTypeSizeAndHash) {
  Workspace ws;
  auto trace = audit::TraceWriter::openInWorkspace(ws.path);
  ASSERT_TRUE(trace.ok()) << trace.error().message();
  RunContext run;
  run.trace = &*trace;
  ASSERT_TRUE(run.record("tool_call", {{"small", "ok"}}).ok()) << "control";
  nlohmann::json big = nlohmann::json::object();  // each string within the trace's 4 KiB, 90 KB in all
  for (int i = 0; i < 30; ++i) big["k" + std::to_string(i)] = std::string(3000, 'x');
  auto r = run.record("tool_call", big);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(trace->count(), 2u);
  std::ifstream f(ws.path + "/.corral/trace.jsonl");
  std::string first, second;
  std::getline(f, first);
  std::getline(f, second);
  const auto line = nlohmann::json::parse(second);
  EXPECT_EQ(line["type"], "entry_oversized");
  EXPECT_EQ(line["data"]["type"], "tool_call");
  const std::string text = big.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  EXPECT_EQ(line["data"]["bytes"], text.size());
  EXPECT_EQ(line["data"]["sha256"], audit::sha256Hex(text));
}

}  // namespace
}  // namespace corral::agent
