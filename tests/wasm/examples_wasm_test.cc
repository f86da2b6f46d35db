// SPDX-License-Identifier: Apache-2.0
// The example guests of examples/wasm/, built by CMake, run under `corral wasm run` with
// exactly the grants their README names.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wasm_fixture.h"

namespace corral::testing::wasm {
namespace {

RunResult runWithStdin(const std::vector<std::string>& opts, const std::string& module, const std::string& input) {
  TempDir d("wasm-stdin");
  d.write("in.json", input);
  const int fd = ::open((d / "in.json").c_str(), O_RDONLY | O_CLOEXEC);
  RunOptions o;
  o.stdin_fd = fd;
  RunResult r = runWasm(opts, module, {}, o);
  ::close(fd);
  return r;
}

TEST(WasmExampleJsonTransform, MinifiesAndPrefixesKeysWithOnlyAnEnvGrant) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "json_transform.wasm");
  RunResult r = runWithStdin({"--env", "KEY_PREFIX=x_"}, guest, "{\"a\": [1, 2.5e3, {\"b\": null, \"c\": \"q\\\"r\"}],\n \"t\": true}\n");
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "{\"x_a\":[1,2.5e3,{\"x_b\":null,\"x_c\":\"q\\\"r\"}],\"x_t\":true}\n") << r.describe();
}

// The first run of a module compiles it: the compile child must not consume the guest's stdin.
TEST(WasmExampleJsonTransform, FirstRunCompilesWithoutEatingStdin) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "json_transform.wasm");
  TempDir cache("wasm-stdin-cache");
  ::chmod(cache.path().c_str(), 0700);
  RunResult r = runWithStdin({"--cache", cache.path()}, guest, "[1, 2]");
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "[1,2]\n") << r.describe();
}

TEST(WasmExampleJsonTransform, RefusesInvalidJsonInOneLine) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "json_transform.wasm");
  for (const char* bad : {"{\"a\": ", "[1,]", "{\"a\" 1}", "01", "\"\x01\""}) {
    RunResult r = runWithStdin({}, guest, bad);
    EXPECT_EQ(r.exit_code, 1) << bad << r.describe();
    EXPECT_TRUE(r.out.empty()) << bad << r.describe();
    ASSERT_FALSE(r.stderrLines().empty()) << r.describe();
    EXPECT_EQ(r.stderrLines()[0].rfind("guest: invalid JSON", 0), 0u) << r.describe();
  }
}

}  // namespace
}  // namespace corral::testing::wasm
