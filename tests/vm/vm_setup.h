// SPDX-License-Identifier: Apache-2.0
// The two guest boots of the vm.* suite and the record each leaves for the *.InVm* tests.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace corral::testing::vm {

// $TMPDIR/corral-vm-test-<uid>/<name>.json: written by a VmSetup test, read by the others.
std::string recordPath(const std::string& name);
// The record, or a json object {"skipped": why} / {"missing": why}; the caller skips or fails.
nlohmann::json loadRecord(const std::string& name);
// Skips the current test when the record says the setup skipped (no VM here), fails it
// when the record is missing (the setup did not run or failed).
#define CORRAL_VM_RECORD(var, name)                                                   \
  nlohmann::json var = ::corral::testing::vm::loadRecord(name);                       \
  if (var.contains("skipped")) GTEST_SKIP() << var["skipped"].get<std::string>();     \
  ASSERT_FALSE(var.contains("missing")) << var["missing"].get<std::string>()

// For setup tests in other files: writes a record, and splits "@@ name" output into checks.
void saveRecord(const std::string& name, const nlohmann::json& j);
nlohmann::json checksOf(const std::string& out);

// Why no VM can run here ("" when one can): from `corral doctor --json`.
std::string whyNoVm();
// The options every VM run of the suite uses: --backend vm, and --allow-weaker kvm where
// KVM is unusable (the report must then say tcg).
std::vector<std::string> vmOptions();

}  // namespace corral::testing::vm
