// SPDX-License-Identifier: Apache-2.0
// The guest kernel a run without --vm-kernel boots (issue 23): the minimal kernel
// scripts/build-vm-kernel.sh cached, when there is one this user alone can write, else
// Debian's. `corral doctor` and the run's report must name the kernel actually chosen.
// On a private cache (hard links to the user's images), so the user's cache is not touched.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "harness.h"
#include "vm/images.h"
#include "vm_setup.h"

namespace corral::testing::vm {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

Json doctorKernel(const std::string& cache) {
  RunResult r = run({corralBin(), "doctor", "--json"}, RunOptions{.env_extra = {"CORRAL_VM_CACHE=" + cache}});
  Json j = Json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.contains("vm")) return Json();
  return j["vm"].value("kernel", Json());
}

TEST(VmKernelChoice, DoctorAndReportNameTheKernelActuallyChosen) {
  if (const std::string why = whyNoVm(); !why.empty()) GTEST_SKIP() << why;
  auto debian = corral::vm::images::defaultKernel();
  ASSERT_TRUE(debian.ok()) << debian.error().message();
  auto user_cache = corral::vm::images::cacheDir();
  ASSERT_TRUE(user_cache.ok());
  TempDir cache("vm-kernel-cache");
  ::chmod(cache.path().c_str(), 0700);
  std::string minimal;  // a real minimal kernel, when the user has built one
  for (const auto& e : fs::directory_iterator(*user_cache)) {
    const std::string name = e.path().filename();
    if (name.rfind("initramfs-", 0) == 0 || name.rfind("rootfs-", 0) == 0)
      fs::create_hard_link(e.path(), cache / name);
    if (name.rfind("vmlinuz-minimal-", 0) == 0 && e.is_regular_file()) minimal = e.path();
  }
  // No minimal kernel cached: Debian's.
  Json k = doctorKernel(cache.path());
  EXPECT_EQ(k.value("kind", ""), "debian") << k.dump();
  EXPECT_EQ(k.value("path", ""), *debian) << k.dump();

  // Planted ones are not chosen: group-writable, or a symlink.
  fs::copy_file(*debian, cache / "vmlinuz-minimal-planted");
  ::chmod((cache / "vmlinuz-minimal-planted").c_str(), 0664);
  fs::create_symlink(*debian, cache / "vmlinuz-minimal-link");
  k = doctorKernel(cache.path());
  EXPECT_EQ(k.value("kind", ""), "debian") << "a group-writable or symlinked kernel was chosen: " << k.dump();

  // Control: one this user alone can write is chosen, and a run boots it and says so.
  const std::string chosen = cache / "vmlinuz-minimal-test";
  fs::copy_file(minimal.empty() ? *debian : minimal, chosen);
  ::chmod(chosen.c_str(), 0644);
  k = doctorKernel(cache.path());
  EXPECT_EQ(k.value("kind", ""), "minimal") << k.dump();
  EXPECT_EQ(k.value("path", ""), chosen) << k.dump();

  std::vector<std::string> opts = vmOptions();
  opts.push_back("--vm-cold");
  RunResult r = runCorral(opts, {"/bin/sh", "-c", "uname -r"},
                          RunOptions{.env_extra = {"CORRAL_VM_CACHE=" + cache.path()}, .deadline = std::chrono::seconds(110)});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  ASSERT_TRUE(r.report.has_value()) << r.describe();
  const Json vm = (*r.report)["vm"];
  EXPECT_EQ(vm.value("kernel", ""), chosen) << vm.dump();
  EXPECT_EQ(vm["kernel_choice"].value("kind", ""), "minimal") << vm.dump();
  auto release = corral::vm::images::kernelRelease(chosen);
  ASSERT_TRUE(release.ok());
  EXPECT_EQ(vm.value("kernel_release", ""), *release) << vm.dump();
  EXPECT_NE(r.out.find(*release), std::string::npos) << "the guest's uname -r is not the chosen kernel's: " << r.out;
  std::printf("booted %s (%s)\n", minimal.empty() ? "a copy of Debian's kernel" : "the cached minimal kernel", release->c_str());
}

}  // namespace
}  // namespace corral::testing::vm
