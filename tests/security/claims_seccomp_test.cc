// SPDX-License-Identifier: Apache-2.0
// Claims seccomp.dangerous-syscalls-denied, seccomp.foreign-abi-refused, landlock.write-confined.
#include <signal.h>

#include "harness.h"

namespace corral::testing {
namespace {

// --- seccomp.dangerous-syscalls-denied ---

struct SyscallCase {
  const char* name;      // a corral-probe try-syscall name
  const char* sentinel;  // what the filter answers: ENOSYS, or EPERM for clone with CLONE_NEW*
};

void PrintTo(const SyscallCase& c, std::ostream* os) { *os << c.name << " -> " << c.sentinel; }

// Each case first asks the unsandboxed kernel: ENOSYS there means this kernel lacks the call
// (kexec, modules and iopl are often compiled out), so the filter's ENOSYS would prove nothing.
class SeccompDangerousSyscallsDenied : public ::testing::TestWithParam<SyscallCase> {};

TEST_P(SeccompDangerousSyscallsDenied, FilterAnswersWithItsSentinel) {
  const SyscallCase& c = GetParam();
  RunResult host = runHostProbe({"try-syscall", c.name});
  if (host.probe().err == "ENOSYS")
    GTEST_SKIP() << "this kernel lacks " << c.name << " (ENOSYS unsandboxed): the filter cannot be told apart";
  RunResult r = runProbe({}, {"try-syscall", c.name});
  EXPECT_TRUE(probeRefused(r, {c.sentinel})) << claim("seccomp.dangerous-syscalls-denied", std::string(c.name) + " was not denied by the filter");
}

TEST_P(SeccompDangerousSyscallsDenied, ControlUnfilteredCallGivesAnotherAnswer) {
  const SyscallCase& c = GetParam();
  RunResult host = runHostProbe({"try-syscall", c.name});
  if (host.probe().err == "ENOSYS") GTEST_SKIP() << "this kernel lacks " << c.name;
  EXPECT_NE(host.probe().err, c.sentinel) << "unsandboxed " << c.name << " already answers " << c.sentinel << host.describe();
  EXPECT_FALSE(host.probe().status.empty()) << host.describe();
}

INSTANTIATE_TEST_SUITE_P(
    , SeccompDangerousSyscallsDenied,
    ::testing::Values(SyscallCase{"mount", "ENOSYS"}, SyscallCase{"umount2", "ENOSYS"}, SyscallCase{"pivot_root", "ENOSYS"},
                      SyscallCase{"setns", "ENOSYS"}, SyscallCase{"unshare-user", "ENOSYS"},
                      SyscallCase{"clone-newuser", "EPERM"}, SyscallCase{"keyctl", "ENOSYS"},
                      SyscallCase{"add_key", "ENOSYS"}, SyscallCase{"request_key", "ENOSYS"}, SyscallCase{"bpf", "ENOSYS"},
                      SyscallCase{"perf_event_open", "ENOSYS"}, SyscallCase{"userfaultfd", "ENOSYS"},
                      SyscallCase{"io_uring_setup", "ENOSYS"}, SyscallCase{"io_uring_enter", "ENOSYS"},
                      SyscallCase{"io_uring_register", "ENOSYS"}, SyscallCase{"kexec_load", "ENOSYS"},
                      SyscallCase{"kexec_file_load", "ENOSYS"}, SyscallCase{"init_module", "ENOSYS"},
                      SyscallCase{"finit_module", "ENOSYS"}, SyscallCase{"delete_module", "ENOSYS"},
                      SyscallCase{"open_by_handle_at", "ENOSYS"}, SyscallCase{"name_to_handle_at", "ENOSYS"},
                      SyscallCase{"ptrace", "ENOSYS"}, SyscallCase{"process_vm_readv", "ENOSYS"},
                      SyscallCase{"process_vm_writev", "ENOSYS"}, SyscallCase{"iopl", "ENOSYS"},
                      SyscallCase{"ioperm", "ENOSYS"}, SyscallCase{"personality-addr-no-randomize", "ENOSYS"},
                      SyscallCase{"clone3", "ENOSYS"}),
    [](const auto& info) {
      std::string n = info.param.name;
      for (char& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

// --- seccomp.foreign-abi-refused ---

struct AbiCase {
  const char* op;  // int80 or x32: getpid through the foreign ABI
};
void PrintTo(const AbiCase& c, std::ostream* os) { *os << c.op; }

class SeccompForeignAbiRefused : public ::testing::TestWithParam<AbiCase> {};

// Without ia32 emulation, int $0x80 faults (SIGSEGV) before any filter sees it: nothing to test.
#define CORRAL_SKIP_WITHOUT_IA32(op, host)                                                    \
  do {                                                                                      \
    if (std::string(op) == "int80" && (host).term_signal == SIGSEGV)                        \
      GTEST_SKIP() << "no ia32 emulation in this kernel: int $0x80 faults without any filter"; \
  } while (0)

TEST_P(SeccompForeignAbiRefused, CallerIsKilledWithSigsys) {
  CORRAL_SKIP_WITHOUT_IA32(GetParam().op, runHostProbe({GetParam().op}));
  RunResult r = runProbe({}, {GetParam().op});
  EXPECT_EQ(r.exit_code, 128 + SIGSYS) << claim("seccomp.foreign-abi-refused", std::string(GetParam().op) + " was not killed") << r.describe();
  EXPECT_EQ(r.reportInt("signal"), SIGSYS) << r.describe();
  EXPECT_FALSE(r.probe().ok()) << claim("seccomp.foreign-abi-refused", std::string(GetParam().op) + " syscall returned") << r.describe();
}

TEST_P(SeccompForeignAbiRefused, ControlHostKernelDoesNotKillIt) {
  RunResult host = runHostProbe({GetParam().op});
  CORRAL_SKIP_WITHOUT_IA32(GetParam().op, host);
  EXPECT_EQ(host.term_signal, 0) << "the host kernel itself kills " << GetParam().op << host.describe();
  EXPECT_FALSE(host.probe().status.empty()) << host.describe();
}

INSTANTIATE_TEST_SUITE_P(, SeccompForeignAbiRefused, ::testing::Values(AbiCase{"int80"}, AbiCase{"x32"}),
                         [](const auto& info) { return std::string(info.param.op); });

// --- landlock.write-confined ---

int hostLandlockAbi() {
  RunResult r = runHostProbe({"landlock-abi"});
  return r.probe().ok() ? static_cast<int>(r.probe().num("abi")) : 0;
}

#define CORRAL_REQUIRE_LANDLOCK()                                                              \
  do {                                                                                         \
    if (hostLandlockAbi() <= 0) GTEST_SKIP() << "landlock is not available on this host kernel"; \
  } while (0)

TEST(LandlockWriteConfined, ReportNamesTheAppliedAbi) {
  CORRAL_REQUIRE_LANDLOCK();
  RunResult r = runProbe({}, {"exit", "0"});
  EXPECT_GT(r.reportInt("landlock_abi"), 0) << claim("landlock.write-confined", "report says landlock was not applied") << r.describe();
  EXPECT_LE(r.reportInt("landlock_abi"), hostLandlockAbi()) << r.describe();
}

// /proc/self/{comm,oom_score_adj} are the command's own files: DAC, mounts and seccomp all let a
// write open through, so only landlock (nothing grants /proc) refuses it, with EACCES.
TEST(LandlockWriteConfined, WritesOutsideTheAllowedTreesAreDenied) {
  CORRAL_REQUIRE_LANDLOCK();
  for (const char* path : {"/proc/self/comm", "/proc/self/oom_score_adj", "/proc/self/timerslack_ns"}) {
    RunResult r = runProbe({}, {"open-wronly", path});
    EXPECT_TRUE(probeRefused(r, {"EACCES"})) << claim("landlock.write-confined", std::string(path) + " opened for write");
  }
}

TEST(LandlockWriteConfined, ControlSameWritesWorkUnconfinedOnHost) {
  for (const char* path : {"/proc/self/comm", "/proc/self/oom_score_adj", "/proc/self/timerslack_ns"})
    EXPECT_TRUE(probeDid(runHostProbe({"open-wronly", path}))) << path;
}

TEST(LandlockWriteConfined, ControlAllowedTreesAreWritable) {
  const std::vector<std::vector<std::string>> kAllowed{{"create", "/workspace/x"}, {"create", "/tmp/x"},
                                                       {"create", "/dev/shm/x"},   {"open-wronly", "/dev/null"},
                                                       {"open-wronly", "/dev/full"}, {"mkdir", "/workspace/d"}};
  for (const auto& op : kAllowed) EXPECT_TRUE(probeDid(runProbe({}, op))) << op[0] << " " << op[1];
}

}  // namespace
}  // namespace corral::testing
