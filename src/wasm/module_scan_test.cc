// SPDX-License-Identifier: Apache-2.0
// module_scan: caps, the name whitelist and malformed input, on modules built byte by byte.
#include "wasm/module_scan.h"

#include <gtest/gtest.h>

#include "wasm/module_bytes_test_util.h"

namespace corral::wasm {
namespace {

using testing::leb;
using testing::rawModule;
using testing::section;
using Mod = testing::RawModule;

std::string build(const Mod& m) { return rawModule(m); }

TEST(WasmModuleScan, AcceptsAWasiCommandAndDropsCustomSections) {
  Mod m;
  m.custom = "*/ system(\"id\"); /*";
  auto r = scanModule(build(m));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->imports, std::vector<std::string>{"wasi_snapshot_preview1.proc_exit"});
  EXPECT_EQ(r->functions, 2u);
  ASSERT_TRUE(r->memory);
  EXPECT_EQ(r->memory->min_pages, 1u);
  EXPECT_FALSE(r->memory->max_pages);
  EXPECT_EQ(r->stripped.find("system"), std::string::npos) << "a custom section reached wasm2c";
  EXPECT_EQ(r->stripped.size(), build(Mod{}).size());
}

TEST(WasmModuleScan, RefusesAnImportNameThatIsNotAnIdentifier) {
  Mod m;
  m.import_name = "proc_exit */ int x = system(\"id\"); /*";
  auto r = scanModule(build(m));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("must be identifiers"), std::string::npos) << r.error().message();
  EXPECT_EQ(r.error().message().find('\n'), std::string::npos);
}

TEST(WasmModuleScan, RefusesAnExportNameThatIsNotAnIdentifier) {
  Mod m;
  m.start_export = "x\n#include </etc/shadow>";
  auto r = scanModule(build(m));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("export"), std::string::npos) << r.error().message();
  EXPECT_EQ(r.error().message().find('\n'), std::string::npos) << "the name was echoed raw";
}

TEST(WasmModuleScan, RefusesImportsCorralDoesNotProvide) {
  Mod m;
  m.import_name = "fd_wrte";
  EXPECT_FALSE(scanModule(build(m)).ok());
  m = Mod{};
  m.import_module = "env";
  EXPECT_FALSE(scanModule(build(m)).ok());
}

TEST(WasmModuleScan, RefusesAWhitelistedImportWithAnotherSignature) {
  Mod m;
  m.import_type = std::string("\x60\x02\x7f\x7e\x00", 5);  // (i32, i64) -> ()
  auto r = scanModule(build(m));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("signature"), std::string::npos) << r.error().message();
}

TEST(WasmModuleScan, CapsModuleSizeFunctionCountAndFunctionSize) {
  ScanCaps caps;
  caps.module_bytes = 100;
  Mod big;
  big.body_nops = 198;
  EXPECT_EQ(scanModule(build(big), caps).error().code(), static_cast<int>(Errc::kLimit));
  caps = ScanCaps{};
  caps.function_bytes = 100;
  auto r = scanModule(build(big), caps);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("compile bomb"), std::string::npos) << r.error().message();
  caps = ScanCaps{};
  caps.functions = 1;
  EXPECT_EQ(scanModule(build(Mod{}), caps).error().code(), static_cast<int>(Errc::kLimit));
  EXPECT_TRUE(scanModule(build(big)).ok()) << "control: the same module passes the default caps";
}

TEST(WasmModuleScan, RefusesMalformedModules) {
  const std::string good = build(Mod{});
  EXPECT_FALSE(scanModule("").ok());
  EXPECT_FALSE(scanModule("\x7f" "ELF\1\0\0\0").ok());
  EXPECT_FALSE(scanModule(std::string("\0asm\2\0\0\0", 8)).ok());
  for (size_t cut = 9; cut < good.size(); ++cut)
    EXPECT_FALSE(scanModule(good.substr(0, cut)).ok()) << "truncated at " << cut;
  EXPECT_FALSE(scanModule(good + section(10, leb(0))).ok()) << "a repeated section";
  EXPECT_FALSE(scanModule(good + std::string("\x01\xff\xff\xff\xff\x7f", 6)).ok()) << "an over-long LEB128";
}

TEST(WasmModuleScan, RefusesSharedOr64BitMemoryAndAModuleWithoutStart) {
  Mod m;
  m.memory_limits = std::string("\x03\x01\x02", 3);
  EXPECT_FALSE(scanModule(build(m)).ok());
  m = Mod{};
  m.start_export = "main";
  EXPECT_FALSE(scanModule(build(m)).ok());
}

TEST(WasmModuleScan, PrintableNameNeverPassesControlBytesOrQuotes) {
  EXPECT_EQ(printableName("a\n*/'b"), "'a?*/?b'");
  EXPECT_EQ(printableName(std::string(100, 'x')).size(), 64u + 5u);
}

}  // namespace
}  // namespace corral::wasm
