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

// The seed's demo: without the grant the proxy's refusal line shows, then the granted call
// succeeds (docs/wasm.md, "HTTP").
TEST(WasmExampleHttpClient, RefusalLineWithoutTheGrantThenTheGrantedCallSucceeds) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "http_client.wasm");
  HttpUpstream up;
  REQUIRE_UPSTREAM(up);
  RunResult refused = runWasm({}, guest, {up.url("/demo")});
  EXPECT_EQ(refused.exit_code, 3) << refused.describe();
  EXPECT_TRUE(hasProxyRefusalLine(refused)) << refused.describe();
  EXPECT_NE(refused.err.find("rule=no-grant"), std::string::npos) << refused.describe();
  EXPECT_TRUE(refused.out.empty()) << refused.describe();
  RunResult allowed = runWasm({"--allow", "http://127.0.0.1:" + std::to_string(up.main)}, guest, {up.url("/demo")});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.describe();
  EXPECT_EQ(allowed.out, "upstream ok /demo") << allowed.describe();
  EXPECT_FALSE(hasProxyRefusalLine(allowed)) << allowed.describe();
  EXPECT_EQ(up.count(), 1);
}

// Streamed both ways: a request body of unknown length from stdin (chunked), echoed back
// chunked; and a response larger than the guest's buffers many times over.
TEST(WasmExampleHttpClient, StreamsBodiesBothWays) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "http_client.wasm");
  HttpUpstream up;
  REQUIRE_UPSTREAM(up);
  const std::vector<std::string> grant = {"--allow", "http://127.0.0.1:" + std::to_string(up.main)};
  std::string body;
  for (int i = 0; body.size() < 300000; ++i) body += "line " + std::to_string(i) + "\n";
  TempDir d("wasm-http-stream");
  d.write("body", body);
  const int fd = ::open((d / "body").c_str(), O_RDONLY | O_CLOEXEC);
  RunOptions o;
  o.stdin_fd = fd;
  RunResult echo = runWasm(grant, guest, {"-T", up.url("/echo")}, o);
  ::close(fd);
  EXPECT_EQ(echo.exit_code, 0) << echo.describe();
  EXPECT_TRUE(echo.out == body) << "echoed " << echo.out.size() << " of " << body.size() << " bytes";
  RunResult big = runWasm(grant, guest, {up.url("/big?n=2000000")});
  EXPECT_EQ(big.exit_code, 0) << big.describe();
  EXPECT_EQ(big.out.size(), 2000000u);
  EXPECT_EQ(big.out.substr(0, 10), "0123456789");
  RunResult fixed = runWasm(grant, guest, {"-X", "PUT", "-d", "exact-length", up.url("/put")});
  EXPECT_EQ(fixed.out, "exact-length") << fixed.describe();
}

}  // namespace
}  // namespace corral::testing::wasm
