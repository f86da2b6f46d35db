// SPDX-License-Identifier: Apache-2.0
// Adversarial tests of the compile pipeline (claims/wasm.toml): names that inject C, imports
// that do not exist, compile bombs, malformed modules and an untrusted cache.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "wasm_fixture.h"

namespace corral::testing::wasm {
namespace {

// A name that, pasted into a C comment by wasm2c 1.0.32, closes the comment and defines a
// constructor: code that would run in the host process at dlopen.
const std::string kInjection = "x */ __attribute__((constructor)) static void corral_pwned(void) { } /* ";

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// wasm.names-whitelisted
TEST(WasmNamesWhitelisted, ImportNameThatInjectsCIsRefusedBeforeWasm2c) {
  TempDir d("wasm-inject");
  TempDir cache("wasm-inject-cache");
  ::chmod(cache.path().c_str(), 0700);
  RawModule m;
  m.import_name = "proc_exit" + kInjection;
  const std::string module = writeModule(d, "inject.wasm", rawModule(m));
  RunResult r = compileWasm({}, module, cache.path());
  EXPECT_EQ(r.exit_code, 125) << claim("wasm.names-whitelisted", "a module whose import name injects C compiled") << r.describe();
  EXPECT_NE(r.err.find("names must be identifiers"), std::string::npos) << r.describe();
  EXPECT_TRUE(cache.entries().empty()) << claim("wasm.names-whitelisted", "the cache gained an entry");
}

TEST(WasmNamesWhitelisted, ExportNameThatInjectsCIsRefused) {
  TempDir d("wasm-inject-export");
  RawModule m;
  m.start_export = "_start" + kInjection;
  RunResult r = runWasm({}, writeModule(d, "inject.wasm", rawModule(m)), {});
  EXPECT_TRUE(wasmRefused(r, "names must be identifiers")) << claim("wasm.names-whitelisted", "an injecting export name ran");
}

// The control: wabt's wasm2c really does paste such a name into C outside any comment, so
// without the whitelist the constructor above would be compiled into the shared object.
TEST(WasmNamesWhitelisted, ControlWasm2cPastesTheNameIntoC) {
  if (::access("/usr/bin/wasm2c", X_OK) != 0) GTEST_SKIP() << "wasm2c is not installed";
  TempDir d("wasm-inject-control");
  RawModule m;
  m.import_name = "proc_exit" + kInjection;
  const std::string module = writeModule(d, "inject.wasm", rawModule(m));
  RunResult r = run({"/usr/bin/wasm2c", module, "-o", d / "out.c"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::string c = readAll(d / "out.c") + readAll(d / "out.h");
  EXPECT_NE(c.find("*/ __attribute__((constructor)) static void corral_pwned"), std::string::npos)
      << "wasm2c no longer pastes names unescaped; the threat this claim answers may be gone";
}

TEST(WasmNamesWhitelisted, ImportsCorralDoesNotProvideAreRefused) {
  CORRAL_REQUIRE_WASM_GUEST(missing, "no_such_import.wasm");
  EXPECT_TRUE(wasmRefused(runWasm({}, missing, {}), "is not provided by corral"));
  TempDir d("wasm-sig");
  RawModule m;
  m.import_name = "fd_write";  // whitelisted, but declared (i32) -> () instead of (i32 i32 i32 i32) -> i32
  EXPECT_TRUE(wasmRefused(runWasm({}, writeModule(d, "sig.wasm", rawModule(m)), {}), "has signature"));
}

TEST(WasmNamesWhitelisted, ControlAWhitelistedImportRuns) {
  TempDir d("wasm-ok");
  RunResult r = runWasm({}, writeModule(d, "ok.wasm", rawModule(RawModule{})), {});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
}

// wasm.compile-bounded
TEST(WasmCompileBounded, OneHugeFunctionIsRefusedBeforeCompiling) {
  TempDir d("wasm-bomb");
  TempDir cache("wasm-bomb-cache");
  ::chmod(cache.path().c_str(), 0700);
  RawModule m;
  m.body_nops = 1u << 20;  // one 1 MiB function: gcc takes minutes on such a body
  RunResult r = compileWasm({}, writeModule(d, "bomb.wasm", rawModule(m)), cache.path());
  EXPECT_EQ(r.exit_code, 125) << claim("wasm.compile-bounded", "a 1 MiB function went to the compiler") << r.describe();
  EXPECT_NE(r.err.find("compile bomb"), std::string::npos) << r.describe();
  EXPECT_TRUE(cache.entries().empty());
}

TEST(WasmCompileBounded, OversizedModuleIsRefused) {
  TempDir d("wasm-huge");
  std::string bytes = rawModule(RawModule{});
  bytes += std::string(9u << 20, '\0');  // past the 8 MiB cap
  RunResult r = compileWasm({}, writeModule(d, "huge.wasm", bytes));
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_NE(r.err.find("the cap is 8388608"), std::string::npos) << r.describe();
}

TEST(WasmCompileBounded, CompileChildIsKilledAtItsTimeout) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  TempDir cache("wasm-slow-cache");
  ::chmod(cache.path().c_str(), 0700);
  // 50 ms: wasm2c and gcc on a 200 KB module take far longer on any machine.
  RunResult r = compileWasm({"--compile-timeout", "50ms"}, guest, cache.path());
  EXPECT_EQ(r.exit_code, 125) << claim("wasm.compile-bounded", "the compile child outlived its timeout") << r.describe();
  EXPECT_NE(r.err.find("killed (timeout)"), std::string::npos) << r.describe();
  EXPECT_TRUE(cache.entries().empty()) << "a killed compile left something in the cache";
}

TEST(WasmCompileBounded, ControlASmallModuleCompilesAndIsCached) {
  TempDir d("wasm-small");
  TempDir cache("wasm-small-cache");
  ::chmod(cache.path().c_str(), 0700);
  RawModule m;
  m.body_nops = 1000;
  const std::string module = writeModule(d, "small.wasm", rawModule(m));
  RunResult first = compileWasm({}, module, cache.path());
  ASSERT_EQ(first.exit_code, 0) << first.describe();
  EXPECT_NE(first.out.find("cache=miss"), std::string::npos) << first.describe();
  RunResult second = compileWasm({}, module, cache.path());
  ASSERT_EQ(second.exit_code, 0) << second.describe();
  EXPECT_NE(second.out.find("cache=hit"), std::string::npos) << second.describe();
}

// wasm.malformed-refused
TEST(WasmMalformedRefused, MalformedModulesAreRefusedInOneLine) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  TempDir d("wasm-bad");
  const std::string good = readAll(guest);
  ASSERT_GT(good.size(), 1000u);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"empty.wasm", ""},
      {"elf.wasm", "\x7f" "ELF\2\1\1\0"},
      {"truncated.wasm", good.substr(0, good.size() / 2)},
      {"version2.wasm", std::string("\0asm\2\0\0\0", 8) + good.substr(8)},
      {"section-overrun.wasm", std::string("\0asm\1\0\0\0\x01\xff\xff\x03", 12)},
  };
  for (const auto& [name, bytes] : bad)
    EXPECT_TRUE(wasmRefused(runWasm({}, writeModule(d, name, bytes), {"hello"}), "malformed module"))
        << claim("wasm.malformed-refused", name + " was not refused as malformed");
  EXPECT_TRUE(wasmRefused(runWasm({}, d / "absent.wasm", {"hello"}), "absent.wasm"));
  RunResult control = runWasm({}, guest, {"hello"});
  EXPECT_EQ(control.exit_code, 0) << "control: the intact module runs" << control.describe();
  EXPECT_NE(control.out.find("hello argc=2 argv0=guest.wasm"), std::string::npos) << control.describe();
}

// wasm.cache-trusted
TEST(WasmCacheTrusted, EntryWritableByOthersIsNotTrusted) {
  TempDir d("wasm-trust");
  TempDir cache("wasm-trust-cache");
  ::chmod(cache.path().c_str(), 0700);
  const std::string module = writeModule(d, "ok.wasm", rawModule(RawModule{}));
  ASSERT_EQ(compileWasm({}, module, cache.path()).exit_code, 0);
  const std::vector<std::string> entries = cache.entries();
  ASSERT_EQ(entries.size(), 1u);
  const std::string entry = cache / entries[0];
  ASSERT_EQ(::chmod(entry.c_str(), 0777), 0);
  RunResult open_dir = compileWasm({}, module, cache.path());
  EXPECT_EQ(open_dir.exit_code, 125) << claim("wasm.cache-trusted", "an entry others can write was used") << open_dir.describe();
  EXPECT_NE(open_dir.err.find("not trusted"), std::string::npos) << open_dir.describe();
  ASSERT_EQ(::chmod(entry.c_str(), 0700), 0);
  ASSERT_EQ(::chmod((entry + "/module.so").c_str(), 0666), 0);
  RunResult open_file = compileWasm({}, module, cache.path());
  EXPECT_EQ(open_file.exit_code, 125) << claim("wasm.cache-trusted", "a module.so others can write was used") << open_file.describe();
  ASSERT_EQ(::chmod((entry + "/module.so").c_str(), 0500), 0);
  RunResult control = compileWasm({}, module, cache.path());
  EXPECT_EQ(control.exit_code, 0) << "control: the same entry, private again, is used" << control.describe();
  EXPECT_NE(control.out.find("cache=hit"), std::string::npos) << control.describe();
}

TEST(WasmCacheTrusted, CacheRootWritableByOthersIsNotTrusted) {
  TempDir d("wasm-trust-root");
  TempDir cache("wasm-trust-root-cache");
  ASSERT_EQ(::chmod(cache.path().c_str(), 0777), 0);
  RunResult r = compileWasm({}, writeModule(d, "ok.wasm", rawModule(RawModule{})), cache.path());
  EXPECT_EQ(r.exit_code, 125) << claim("wasm.cache-trusted", "a world-writable cache was used") << r.describe();
  EXPECT_NE(r.err.find("not trusted"), std::string::npos) << r.describe();
  EXPECT_TRUE(cache.entries().empty());
}

}  // namespace
}  // namespace corral::testing::wasm
