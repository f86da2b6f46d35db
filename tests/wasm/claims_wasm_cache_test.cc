// SPDX-License-Identifier: Apache-2.0
// wasm.cache-trusted against a tampered entry, in both binaries that use the cache: the
// `corral` launcher (a stub corral-core beside it shows it decided alone, wasm_fixture.h)
// and corral-core. Each damage is undone and the control runs from the same entry.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>

#include "wasm_fixture.h"

namespace corral::testing::wasm {
namespace {

class WasmCacheTrusted : public ::testing::Test {
 protected:
  void SetUp() override {
    guest_ = guestModule("guest.wasm");
    if (guest_.empty()) GTEST_SKIP() << "wasm guest guest.wasm not built: clang wasm32-wasi, wasi-libc or wabt missing";
    ASSERT_TRUE(stub_.ok());
    ::chmod(cache_.path().c_str(), 0700);
    ASSERT_EQ(compileWasm({}, guest_, cache_.path()).exit_code, 0);
    ASSERT_EQ(cache_.entries().size(), 1u);
    entry_ = cache_ / cache_.entries()[0];
  }
  RunResult launcher() { return runWasmWith(stub_.corral(), {"--cache", cache_.path()}, guest_, {"hello"}); }
  RunResult core() { return runWasmWith(coreBin(), {"--cache", cache_.path()}, guest_, {"hello"}); }
  // Both binaries refuse, with the same line, and neither runs the guest nor hands off.
  void expectRefusedByBoth(const std::string& damage, const std::string& why) {
    RunResult l = launcher(), c = core();
    EXPECT_FALSE(handedOff(l)) << damage << ": the launcher handed a trusted-cache decision to corral-core";
    EXPECT_TRUE(wasmRefusedWithReport(l, why)) << claim("wasm.cache-trusted", "the launcher used an entry with " + damage);
    EXPECT_TRUE(wasmRefusedWithReport(c, why)) << claim("wasm.cache-trusted", "corral-core used an entry with " + damage);
    EXPECT_EQ(l.err, c.err) << damage << ": the two binaries refused differently";
  }
  void expectControlRuns(const std::string& after) {
    for (RunResult r : {launcher(), core()}) {
      EXPECT_EQ(r.exit_code, 0) << "control after " << after << ": the restored entry runs" << r.describe();
      EXPECT_NE(r.out.find("hello argc=2"), std::string::npos) << r.describe();
      EXPECT_NE(r.err.find("\"cache\":\"hit\""), std::string::npos) << r.describe();
    }
  }
  // --json: the refusal line, then the report holding it.
  static ::testing::AssertionResult wasmRefusedWithReport(const RunResult& r, const std::string& why) {
    if (r.exit_code != 125) return ::testing::AssertionFailure() << "expected exit 125" << r.describe();
    if (!r.out.empty()) return ::testing::AssertionFailure() << "the guest ran" << r.describe();
    const std::vector<std::string> lines = r.stderrLines();
    if (lines.empty() || lines[0].rfind("corral: ", 0) != 0 || lines[0].find(why) == std::string::npos)
      return ::testing::AssertionFailure() << "expected 'corral: ...'" << why << "'" << r.describe();
    return ::testing::AssertionSuccess();
  }
  std::string so() const { return entry_ + "/module.so"; }

  std::string guest_;
  StubCore stub_;
  TempDir cache_{"wasm-tamper-cache"};
  std::string entry_;
};

TEST_F(WasmCacheTrusted, ChangedBytesInModuleSoAreRefusedByLauncherAndCore) {
  ASSERT_EQ(::chmod(so().c_str(), 0700), 0);
  std::string bytes = readHostFile(so());
  ASSERT_GT(bytes.size(), 100u);
  const char original = bytes[bytes.size() / 2];
  bytes[bytes.size() / 2] = static_cast<char>(original ^ 0x5a);
  FILE* f = std::fopen(so().c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  std::fseek(f, static_cast<long>(bytes.size() / 2), SEEK_SET);
  std::fputc(bytes[bytes.size() / 2], f);
  std::fclose(f);
  ASSERT_EQ(::chmod(so().c_str(), 0500), 0);
  expectRefusedByBoth("one byte of module.so changed", "differ from the digest recorded");
  ASSERT_EQ(::chmod(so().c_str(), 0700), 0);
  f = std::fopen(so().c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  std::fseek(f, static_cast<long>(bytes.size() / 2), SEEK_SET);
  std::fputc(original, f);
  std::fclose(f);
  ASSERT_EQ(::chmod(so().c_str(), 0500), 0);
  expectControlRuns("the byte was restored");
}

TEST_F(WasmCacheTrusted, MissingDigestIsRefusedByLauncherAndCore) {
  const std::string digest = entry_ + "/module.so.sha256", aside = entry_ + ".digest";
  ASSERT_EQ(::rename(digest.c_str(), aside.c_str()), 0);
  expectRefusedByBoth("no digest", "module.so.sha256: missing; not trusted");
  ASSERT_EQ(::rename(aside.c_str(), digest.c_str()), 0);
  expectControlRuns("the digest was put back");
}

TEST_F(WasmCacheTrusted, GroupWritableEntryIsRefusedByLauncherAndCore) {
  ASSERT_EQ(::chmod(entry_.c_str(), 0770), 0);
  expectRefusedByBoth("a group-writable entry directory", "writable by group or others; not trusted");
  ASSERT_EQ(::chmod(entry_.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(so().c_str(), 0520), 0);
  expectRefusedByBoth("a group-writable module.so", "writable by group or others; not trusted");
  ASSERT_EQ(::chmod(so().c_str(), 0500), 0);
  expectControlRuns("the modes were restored");
}

TEST_F(WasmCacheTrusted, EntryOwnedByAnotherUserIsRefusedByLauncherAndCore) {
  if (!isRoot()) GTEST_SKIP() << "chown to another uid needs root (rootless, every file the test can make is its own)";
  ASSERT_EQ(::chown(so().c_str(), 12345, static_cast<gid_t>(-1)), 0);
  expectRefusedByBoth("module.so owned by uid 12345", "owned by uid 12345, not this user; not trusted");
  ASSERT_EQ(::chown(so().c_str(), ::geteuid(), static_cast<gid_t>(-1)), 0);
  ASSERT_EQ(::chown(entry_.c_str(), 12345, static_cast<gid_t>(-1)), 0);
  expectRefusedByBoth("an entry directory owned by uid 12345", "owned by uid 12345, not this user; not trusted");
  ASSERT_EQ(::chown(entry_.c_str(), ::geteuid(), static_cast<gid_t>(-1)), 0);
  expectControlRuns("the owner was restored");
}

TEST_F(WasmCacheTrusted, SymlinkedModuleSoOrEntryIsRefusedByLauncherAndCore) {
  const std::string real = entry_ + "/real.so";
  ASSERT_EQ(::rename(so().c_str(), real.c_str()), 0);
  ASSERT_EQ(::symlink("real.so", so().c_str()), 0);
  expectRefusedByBoth("module.so a symlink", "module.so");
  ASSERT_EQ(::unlink(so().c_str()), 0);
  ASSERT_EQ(::rename(real.c_str(), so().c_str()), 0);
  const std::string moved = cache_ / "moved";
  ASSERT_EQ(::rename(entry_.c_str(), moved.c_str()), 0);
  ASSERT_EQ(::symlink("moved", entry_.c_str()), 0);
  expectRefusedByBoth("the entry directory a symlink", "wasm cache entry");
  ASSERT_EQ(::unlink(entry_.c_str()), 0);
  ASSERT_EQ(::rename(moved.c_str(), entry_.c_str()), 0);
  expectControlRuns("the links were removed");
}

// A module rewritten after it was cached has another key: the old entry is never served for it.
TEST_F(WasmCacheTrusted, ModuleChangedAfterCachingIsNotServedFromTheOldEntry) {
  TempDir d("wasm-changed");
  const std::string module = d / "guest.wasm";
  std::filesystem::copy_file(guest_, module);
  RunResult before = runWasmWith(stub_.corral(), {"--cache", cache_.path()}, module, {"hello"});
  ASSERT_EQ(before.exit_code, 0) << "control: the cached module is served by the launcher" << before.describe();
  d.write("guest.wasm", rawModule(RawModule{}));  // a module that prints nothing
  EXPECT_TRUE(handedOff(runWasmWith(stub_.corral(), {"--cache", cache_.path()}, module, {"hello"})))
      << claim("wasm.cache-trusted", "the launcher served a changed module from the old entry");
  RunResult after = runWasm({"--cache", cache_.path()}, module, {"hello"});
  EXPECT_EQ(after.exit_code, 0) << after.describe();
  EXPECT_EQ(after.out, "") << claim("wasm.cache-trusted", "the changed module ran the old entry's code") << after.describe();
  EXPECT_NE(after.err.find("\"cache\":\"miss\""), std::string::npos) << after.describe();
  EXPECT_EQ(cache_.entries().size(), 2u) << "the changed module got its own entry";
}

}  // namespace
}  // namespace corral::testing::wasm
