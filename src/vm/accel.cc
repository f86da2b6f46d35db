// SPDX-License-Identifier: Apache-2.0
// The accelerator probe: open /dev/kvm, create a VM, run a real-mode "out; hlt" guest.
#include "vm/accel.h"

#include <fcntl.h>
#include <linux/kvm.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "base/unique_fd.h"

namespace corral::vm {
namespace {

// Exit codes of the probe child.
enum ProbeCode { kRanGuest = 0, kNoDevice = 10, kNoAccess, kBadApi, kNoVm, kNoVcpu, kRunFailed, kWrongExit, kNoCpuid, kCpuidBase = 32 };

// The x86-64 baseline every distribution kernel assumes. A software virtualiser can pass the
// real-mode test below and still offer guests no SSE3 (seen here: Debian's kernel then hangs
// before its first message), so the CPUID KVM would give a guest is checked too.
struct Feature {
  uint32_t leaf;
  bool edx;  // else ecx
  int bit;
  const char* name;
};
constexpr Feature kBaseline[] = {
    {1, true, 0, "fpu"},     {1, true, 4, "tsc"},       {1, true, 5, "msr"},  {1, true, 6, "pae"},
    {1, true, 8, "cx8"},     {1, true, 9, "apic"},      {1, true, 15, "cmov"}, {1, true, 24, "fxsr"},
    {1, true, 25, "sse"},    {1, true, 26, "sse2"},     {1, false, 0, "sse3"}, {1, false, 13, "cx16"},
    {0x80000001, true, 11, "syscall"}, {0x80000001, true, 20, "nx"}, {0x80000001, true, 29, "lm"},
};

// The index of the first baseline feature KVM would not give a guest, -1 when all are
// there, -2 when KVM cannot say (QEMU then boots a guest with whatever it guesses).
int missingFeature(int kvm) {
  // kvm_cpuid2 ends in a flexible array: a byte buffer sized for 256 entries holds it.
  constexpr uint32_t kEntries = 256;
  alignas(kvm_cpuid2) static unsigned char buf[sizeof(kvm_cpuid2) + kEntries * sizeof(kvm_cpuid_entry2)];
  auto* cpuid = reinterpret_cast<kvm_cpuid2*>(buf);
  cpuid->nent = kEntries;
  if (::ioctl(kvm, KVM_GET_SUPPORTED_CPUID, cpuid) < 0) return -2;
  for (size_t f = 0; f < sizeof kBaseline / sizeof kBaseline[0]; ++f) {
    bool have = false;
    for (uint32_t i = 0; i < cpuid->nent; ++i) {
      const kvm_cpuid_entry2& e = cpuid->entries[i];
      if (e.function == kBaseline[f].leaf) have = ((kBaseline[f].edx ? e.edx : e.ecx) >> kBaseline[f].bit) & 1;
    }
    if (!have) return static_cast<int>(f);
  }
  return -1;
}

// The guest: mov al, 0x2a; out 0x10, al; hlt. A working KVM reports the port write, then the
// halt, exactly; anything else (an error, another exit, a hang) means guests do not run.
[[noreturn]] void probeChild() {
  ::alarm(2);  // a /dev/kvm whose KVM_RUN never returns is unusable too: SIGALRM ends us
  int kvm = ::open("/dev/kvm", O_RDWR | O_CLOEXEC);
  if (kvm < 0) ::_exit(errno == ENOENT ? kNoDevice : kNoAccess);
  if (::ioctl(kvm, KVM_GET_API_VERSION, 0) != KVM_API_VERSION) ::_exit(kBadApi);
  if (int missing = missingFeature(kvm); missing != -1) ::_exit(missing == -2 ? kNoCpuid : kCpuidBase + missing);
  int vm = ::ioctl(kvm, KVM_CREATE_VM, 0);
  if (vm < 0) ::_exit(kNoVm);
  void* mem = ::mmap(nullptr, 0x1000, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) ::_exit(kNoVm);
  const unsigned char code[] = {0xb0, 0x2a, 0xe6, 0x10, 0xf4};
  std::memcpy(mem, code, sizeof code);
  kvm_userspace_memory_region region{0, 0, 0x1000, 0x1000, reinterpret_cast<uint64_t>(mem)};
  if (::ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0) ::_exit(kNoVm);
  int vcpu = ::ioctl(vm, KVM_CREATE_VCPU, 0);
  if (vcpu < 0) ::_exit(kNoVcpu);
  int size = ::ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
  if (size <= 0) ::_exit(kNoVcpu);
  auto* run = static_cast<kvm_run*>(::mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0));
  if (run == MAP_FAILED) ::_exit(kNoVcpu);
  kvm_sregs sregs{};
  if (::ioctl(vcpu, KVM_GET_SREGS, &sregs) < 0) ::_exit(kNoVcpu);
  sregs.cs.base = 0;
  sregs.cs.selector = 0;
  if (::ioctl(vcpu, KVM_SET_SREGS, &sregs) < 0) ::_exit(kNoVcpu);
  kvm_regs regs{};
  regs.rip = 0x1000;
  regs.rflags = 0x2;
  if (::ioctl(vcpu, KVM_SET_REGS, &regs) < 0) ::_exit(kNoVcpu);
  if (::ioctl(vcpu, KVM_RUN, 0) < 0) ::_exit(kRunFailed);
  if (run->exit_reason != KVM_EXIT_IO || run->io.port != 0x10 ||
      reinterpret_cast<unsigned char*>(run)[run->io.data_offset] != 0x2a)
    ::_exit(kWrongExit);
  if (::ioctl(vcpu, KVM_RUN, 0) < 0) ::_exit(kRunFailed);
  if (run->exit_reason != KVM_EXIT_HLT) ::_exit(kWrongExit);
  ::_exit(kRanGuest);
}

}  // namespace

const char* accelName(AccelProbe::Kind k) {
  switch (k) {
    case AccelProbe::Kind::kKvm: return "kvm";
    case AccelProbe::Kind::kTcgOnly: return "tcg only";
    case AccelProbe::Kind::kUnavailable: return "unavailable";
  }
  return "?";
}

AccelProbe probeAccel() {
  AccelProbe p;
  for (const char* q : {"/usr/bin/qemu-system-x86_64", "/usr/local/bin/qemu-system-x86_64"})
    if (::access(q, X_OK) == 0) {
      p.qemu = q;
      break;
    }
  if (p.qemu.empty()) {
    p.detail = "qemu-system-x86_64 not found";
    p.fix = "install Debian's qemu-system-x86 (scripts/bootstrap.sh does)";
    return p;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    p.kind = AccelProbe::Kind::kTcgOnly;
    p.detail = "could not probe /dev/kvm (fork failed)";
    return p;
  }
  if (pid == 0) probeChild();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == kRanGuest) {
    p.kind = AccelProbe::Kind::kKvm;
    p.detail = "/dev/kvm ran a test guest";
    return p;
  }
  p.kind = AccelProbe::Kind::kTcgOnly;
  switch (code) {
    case kNoDevice:
      p.detail = "no /dev/kvm";
      p.fix = "use a host with hardware virtualisation (VT-x/AMD-V, nested virtualisation on a cloud VM) and the kvm module";
      break;
    case kNoAccess:
      p.detail = "/dev/kvm is not readable and writable by this user";
      p.fix = "add this user to the kvm group (or run as root)";
      break;
    case kBadApi:
    case kNoVm:
    case kNoVcpu:
      p.detail = "/dev/kvm opens but will not create a VM with a vCPU";
      p.fix = "load kvm_intel or kvm_amd on a host with hardware virtualisation";
      break;
    case kNoCpuid:
      p.detail = "/dev/kvm is present but cannot boot a guest: it cannot say which CPU features a guest gets "
                 "(KVM_GET_SUPPORTED_CPUID fails; a software virtualiser?)";
      p.fix = "use a host with real KVM (hardware virtualisation); meanwhile --allow-weaker kvm runs under TCG";
      break;
    default:
      if (code >= kCpuidBase && code < kCpuidBase + static_cast<int>(sizeof kBaseline / sizeof kBaseline[0])) {
        p.detail = std::string("/dev/kvm is present but cannot boot a guest: it offers guests no ") +
                   kBaseline[code - kCpuidBase].name + " (x86-64 baseline; a software virtualiser?)";
        p.fix = "use a host with real KVM (hardware virtualisation); meanwhile --allow-weaker kvm runs under TCG";
        break;
      }
      p.detail = WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM
                     ? "/dev/kvm is present but cannot boot a guest: its test guest did not finish in 2 s"
                     : "/dev/kvm is present but cannot boot a guest: its test guest did not run as hardware does";
      p.fix = "use a host with real KVM (this /dev/kvm is likely a software virtualiser); meanwhile --allow-weaker kvm runs under TCG";
      break;
  }
  return p;
}

}  // namespace corral::vm
