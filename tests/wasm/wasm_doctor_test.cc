// SPDX-License-Identifier: Apache-2.0
// `corral doctor`'s wasm line (cli/doctor_wasm.h): the toolchain's versions, the cache judged
// as a run judges it, the guest runner; each checked against the host itself.
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "wasm_fixture.h"

namespace corral::testing::wasm {
namespace {

struct Doctor {
  RunResult text, json;
  nlohmann::json wasm;
};

Doctor doctorWithCache(const std::string& cache) {
  RunOptions o;
  o.env_extra = {"CORRAL_WASM_CACHE=" + cache};
  Doctor d{run({corralBin(), "doctor"}, o), run({corralBin(), "doctor", "--json"}, o), nullptr};
  auto j = nlohmann::json::parse(d.json.out, nullptr, false);
  if (j.is_object() && j.contains("wasm")) d.wasm = j["wasm"];
  return d;
}

// The first line a host tool prints for --version, run directly (the control for doctor's).
std::string hostVersion(const std::string& tool) {
  RunResult r = run({tool, "--version"});
  return r.out.substr(0, r.out.find('\n'));
}

std::string wasmLine(const RunResult& r) {
  std::vector<std::string> lines = linesStartingWith(r.out, "wasm: ");
  return lines.size() == 1 ? lines[0] : "";
}

TEST(WasmDoctor, ReportsToolchainVersionsCacheAndGuestRunner) {
  struct stat st {};
  if (::stat("/usr/bin/wasm2c", &st) != 0 || ::stat("/usr/bin/cc", &st) != 0) GTEST_SKIP() << "wasm2c or cc missing";
  TempDir cache("wasm-doctor-cache");
  ::chmod(cache.path().c_str(), 0700);
  Doctor d = doctorWithCache(cache.path());
  ASSERT_TRUE(d.wasm.is_object()) << d.json.describe();
  EXPECT_EQ(d.wasm["state"], "ok") << d.wasm.dump();
  EXPECT_EQ(d.wasm["wasm2c"]["version"], hostVersion("/usr/bin/wasm2c")) << d.wasm.dump();
  EXPECT_EQ(d.wasm["cc"]["version"], hostVersion("/usr/bin/cc")) << d.wasm.dump();
  EXPECT_EQ(d.wasm["cache"]["path"], cache.path());
  EXPECT_EQ(d.wasm["cache"]["state"], "usable") << d.wasm.dump();
  const std::string build = corralBin().substr(0, corralBin().rfind('/') + 1);
  EXPECT_EQ(d.wasm["guest"], build + "corral-wasm-guest") << d.wasm.dump();
  const std::string line = wasmLine(d.text);
  EXPECT_EQ(line.rfind("wasm: ok (wasm2c " + hostVersion("/usr/bin/wasm2c"), 0), 0u) << d.text.describe();
  EXPECT_NE(line.find("cache " + cache.path() + " usable"), std::string::npos) << line;
  EXPECT_EQ(line.find("fix:"), std::string::npos) << line;
}

TEST(WasmDoctor, UnusableCacheMakesTheBackendUnavailableWithTheFix) {
  TempDir cache("wasm-doctor-open-cache");
  ASSERT_EQ(::chmod(cache.path().c_str(), 0777), 0);
  Doctor d = doctorWithCache(cache.path());
  ASSERT_TRUE(d.wasm.is_object()) << d.json.describe();
  EXPECT_EQ(d.wasm["state"], "unavailable") << d.wasm.dump();
  EXPECT_EQ(d.wasm["cache"]["state"], "unusable") << d.wasm.dump();
  const std::string line = wasmLine(d.text);
  EXPECT_EQ(line.rfind("wasm: unavailable (", 0), 0u) << d.text.describe();
  EXPECT_NE(line.find("writable by group or others; not trusted"), std::string::npos) << line;
  EXPECT_NE(line.find("; fix: "), std::string::npos) << line;
  EXPECT_EQ(d.text.exit_code, 0) << "the wasm backend is optional: doctor's status is the default exec's";
  // Control: the same directory, private again, is what a run would use.
  ASSERT_EQ(::chmod(cache.path().c_str(), 0700), 0);
  Doctor again = doctorWithCache(cache.path());
  EXPECT_EQ(again.wasm["cache"]["state"], "usable") << again.wasm.dump();
  EXPECT_EQ(compileWasm({}, writeModule(cache, "m.wasm", rawModule(RawModule{})), cache.path()).exit_code, 0)
      << "control: a compile uses the cache doctor called usable";
}

TEST(WasmDoctor, AbsentCacheIsReportedAndNotCreated) {
  TempDir parent("wasm-doctor-absent");
  const std::string cache = parent / "not-yet";
  Doctor d = doctorWithCache(cache);
  ASSERT_TRUE(d.wasm.is_object()) << d.json.describe();
  EXPECT_EQ(d.wasm["cache"]["state"], "absent") << d.wasm.dump();
  EXPECT_FALSE(parent.exists("not-yet")) << "doctor created the cache";
}

}  // namespace
}  // namespace corral::testing::wasm
