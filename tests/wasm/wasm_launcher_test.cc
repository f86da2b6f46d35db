// SPDX-License-Identifier: Apache-2.0
// `corral wasm run` served by the `corral` launcher (cli/wasm_run.h): which runs it keeps, which
// it hands to corral-core, and that both give the same run. Which binary served a run is seen
// through a stub corral-core (wasm_fixture.h, StubCore), never through timing.
#include <sys/stat.h>

#include "wasm_fixture.h"

namespace corral::testing::wasm {
namespace {

struct Cache {
  TempDir dir{"wasm-launcher-cache"};
  Cache() { ::chmod(dir.path().c_str(), 0700); }
  std::vector<std::string> opt() const { return {"--cache", dir.path()}; }
};

class WasmLauncher : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(stub_.ok()); }
  // Compiles module into cache_ with the real corral.
  void cached(const std::string& module) { ASSERT_EQ(compileWasm({}, module, cache_.dir.path()).exit_code, 0); }
  StubCore stub_;
  Cache cache_;
};

TEST_F(WasmLauncher, CachedRunWithoutEgressIsServedWithoutCorralCore) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  cached(guest);
  const StubCore& stub = stub_;
  const Cache& cache = cache_;
  RunResult r = runWasmWith(stub.corral(), cache.opt(), guest, {"hello"});
  EXPECT_EQ(r.exit_code, 0) << "the launcher did not serve a cached run without egress itself" << r.describe();
  EXPECT_NE(r.out.find("hello argc=2 argv0=guest.wasm"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("\"cache\":\"hit\""), std::string::npos) << r.describe();
  // Control: the same stub does take over what the launcher must not serve.
  Cache empty;
  EXPECT_TRUE(handedOff(runWasmWith(stub.corral(), empty.opt(), guest, {"hello"}))) << "a cache miss was not handed off";
  EXPECT_TRUE(empty.dir.entries().empty()) << "the launcher compiled";
  EXPECT_TRUE(handedOff(runWasmWith(stub.corral(), {"--cache", cache.dir.path(), "--allow", "http://127.0.0.1:9"}, guest, {"hello"})))
      << "an --allow run was not handed off";
  EXPECT_TRUE(handedOff(run({stub.corral(), "wasm", "compile", "--cache", cache.dir.path(), guest}))) << "wasm compile";
  EXPECT_TRUE(handedOff(run({stub.corral(), "wasm", "run", "--no-such-option", guest}))) << "a bad command line";
}

TEST_F(WasmLauncher, CorralHttpModuleIsHandedOffEvenWhenCached) {
  CORRAL_REQUIRE_WASM_GUEST(client, "http_client.wasm");
  cached(client);
  EXPECT_TRUE(handedOff(runWasmWith(stub_.corral(), cache_.opt(), client, {"http://127.0.0.1:9/"})))
      << "a cached corral_http module, which needs the egress proxy, ran in the launcher";
}

// The launcher's run and corral-core's, of the same cached module with the same arguments:
// the same exit code, stdout and stderr, byte for byte but for the report's measurements.
TEST_F(WasmLauncher, LauncherAndCorralCoreGiveTheSameRun) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  CORRAL_REQUIRE_WASM_GUEST(declared_max, "declared_max.wasm");
  cached(guest);
  cached(declared_max);
  const StubCore& stub = stub_;
  const Cache& cache = cache_;
  TempDir data("wasm-launcher-data");
  data.write("f.txt", "file-contents");
  struct Case {
    std::string name;
    std::vector<std::string> opts;
    std::string module;
    std::vector<std::string> args;
    int exit_code;
  };
  const std::vector<Case> cases = {
      {"hello", {}, guest, {"hello", "a b"}, 0},
      {"exit status", {}, guest, {"exit", "7"}, 7},
      {"env", {"--env", "K=v"}, guest, {"env"}, 0},
      {"read-only preopen", {"--dir", data.path() + ":/data:ro"}, guest, {"open", "/data/f.txt", "/etc/passwd"}, 0},
      {"out-of-bounds trap", {}, guest, {"oob"}, 132},
      {"stack trap", {}, guest, {"recurse"}, 132},
      {"timeout", {"--timeout", "300ms"}, guest, {"loop"}, 124},
      {"memory refusal", {"--memory", "64K"}, declared_max, {}, 125},
      {"missing --dir", {"--dir", data / "absent:/x"}, guest, {"hello"}, 125},
  };
  for (const Case& c : cases) {
    std::vector<std::string> opts = cache.opt();
    opts.insert(opts.end(), c.opts.begin(), c.opts.end());
    RunResult launcher = runWasmWith(stub.corral(), opts, c.module, c.args);
    RunResult core = runWasmWith(coreBin(), opts, c.module, c.args);
    EXPECT_EQ(launcher.exit_code, c.exit_code) << c.name << launcher.describe();
    EXPECT_FALSE(handedOff(launcher)) << c.name << ": handed off";
    EXPECT_EQ(launcher.exit_code, core.exit_code) << c.name;
    EXPECT_EQ(launcher.out, core.out) << c.name;
    EXPECT_EQ(withoutMeasurements(launcher.err), withoutMeasurements(core.err)) << c.name;
  }
  // Control: the comparison sees a difference when there is one.
  RunResult a = runWasmWith(coreBin(), cache.opt(), guest, {"exit", "7"});
  RunResult b = runWasmWith(coreBin(), cache.opt(), guest, {"exit", "8"});
  EXPECT_NE(withoutMeasurements(a.err), withoutMeasurements(b.err));
}

}  // namespace
}  // namespace corral::testing::wasm
