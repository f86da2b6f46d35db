// SPDX-License-Identifier: Apache-2.0
// The wasm claim tests' harness: the test guests built by CMake, `corral wasm run`, and a
// per-user compile cache shared by every test (each guest compiles once per uid).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness.h"
#include "wasm/module_bytes_test_util.h"

namespace corral::testing::wasm {

// A guest module built by tests/wasm/CMakeLists.txt ("guest.wasm", "recurse.wasm", ...), or
// "" when the wasm toolchain was missing at build time (the test then skips, saying so).
std::string guestModule(const std::string& name);
// GTEST_SKIP()s when the module or the host's wasm toolchain is missing.
#define CORRAL_REQUIRE_WASM_GUEST(path, name)                                                           \
  const std::string path = ::corral::testing::wasm::guestModule(name);                                  \
  if (path.empty()) GTEST_SKIP() << "wasm guest " << name << " not built: clang wasm32-wasi, wasi-libc or wabt missing"

// $TMPDIR/corral-wasm-test-cache-<uid>: owned by the running user, as the cache requires.
std::string testCache();

// `corral wasm run --json --cache <testCache()> OPTS MODULE -- ARGS...` (OPTS may name another --cache)
RunResult runWasm(const std::vector<std::string>& opts, const std::string& module, const std::vector<std::string>& args,
                  const RunOptions& run_opts = {});
// The same with another binary in corral's place (StubCore::corral(), or the build's corral-core).
RunResult runWasmWith(const std::string& bin, const std::vector<std::string>& opts, const std::string& module,
                      const std::vector<std::string>& args, const RunOptions& run_opts = {});
// `corral wasm compile --cache <cache> OPTS MODULE`
RunResult compileWasm(const std::vector<std::string>& opts, const std::string& module, const std::string& cache = testCache());

// corral refused before any guest ran: exit 125, one "corral: " stderr line (beside the JSON
// report) containing `why`, nothing on stdout.
::testing::AssertionResult wasmRefused(const RunResult& r, const std::string& why);

// Lines of the guest's stdout that start with prefix.
std::vector<std::string> linesStartingWith(const std::string& out, const std::string& prefix);
// A wasm binary written into dir as name, returning its path.
std::string writeModule(const TempDir& dir, const std::string& name, const std::string& bytes);

// How a test knows which binary served a run without timing it: a directory holding copies of
// the build's `corral` launcher and corral-wasm-guest beside a stub corral-core, a shell
// script that prints kStubCoreLine on stderr and exits kStubCoreExit. The launcher finds
// corral-core and the guest runner beside itself (/proc/self/exe), so a run through
// corral() that does not end in the stub's status was served by the launcher alone.
inline constexpr int kStubCoreExit = 97;
inline constexpr char kStubCoreLine[] = "stub corral-core: handed off";
class StubCore {
 public:
  StubCore();
  std::string corral() const { return dir_ / "corral"; }
  bool ok() const { return ok_; }

 private:
  TempDir dir_;
  bool ok_ = false;
};
// The run ended in the stub corral-core (exit kStubCoreExit, its line on stderr).
bool handedOff(const RunResult& r);
// The build's corral-core, beside corralBin().
std::string coreBin();
// A --json run's stderr with the report's measurements (wall_ms, cpu_user_ms, cpu_sys_ms,
// peak_memory_bytes) set to 0: what two runs of the same guest must agree on byte for byte.
std::string withoutMeasurements(const std::string& err);

// tests/wasm/http_upstream.py: one HTTP service on 127.0.0.1 under two ports (main, other).
class HttpUpstream {
 public:
  HttpUpstream();
  ~HttpUpstream();
  bool ok() const { return main > 0 && other > 0; }
  std::string url(const std::string& path = "/", const std::string& host = "127.0.0.1") const {
    return "http://" + host + ":" + std::to_string(main) + path;
  }
  // Requests the service answered on either port, asked directly (never through corral).
  int count() const;
  int main = 0, other = 0;

 private:
  std::optional<Process> proc_;
};

#define REQUIRE_UPSTREAM(u) \
  if (!(u).ok()) GTEST_FAIL() << "tests/wasm/http_upstream.py did not start"

// The egress proxy's log line for a refused request (cli/exec_egress.cc: shown by default).
bool hasProxyRefusalLine(const RunResult& r);
// The report's egress events' decisions, in order ("allow"/"refuse").
std::vector<std::string> egressDecisions(const RunResult& r);

using corral::wasm::testing::RawModule;
using corral::wasm::testing::rawModule;

}  // namespace corral::testing::wasm
