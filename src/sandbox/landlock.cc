// SPDX-License-Identifier: Apache-2.0
// Landlock ruleset construction (child side: syscalls only, no allocation).
#include "sandbox/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace corral::sandbox::landlock {
namespace {

// Declared here rather than taken from <linux/landlock.h>: Debian 12's headers stop at
// ABI 3, and the kernel accepts any struct prefix whose size matches the ABI we use.
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;  // ABI >= 4
  uint64_t scoped;              // ABI >= 6
};
struct PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

constexpr int kRulePathBeneath = 1;
constexpr uint64_t kExecute = 1ull << 0, kWriteFile = 1ull << 1, kReadFile = 1ull << 2, kReadDir = 1ull << 3;
constexpr uint64_t kRemoveDir = 1ull << 4, kRemoveFile = 1ull << 5, kMakeChar = 1ull << 6, kMakeDir = 1ull << 7;
constexpr uint64_t kMakeReg = 1ull << 8, kMakeSock = 1ull << 9, kMakeFifo = 1ull << 10, kMakeBlock = 1ull << 11;
constexpr uint64_t kMakeSym = 1ull << 12, kRefer = 1ull << 13, kTruncate = 1ull << 14, kIoctlDev = 1ull << 15;
constexpr uint64_t kScopeAbstractUnix = 1ull << 0, kScopeSignal = 1ull << 1;

uint64_t handledFs(int abi) {
  uint64_t all = kExecute | kWriteFile | kReadFile | kReadDir | kRemoveDir | kRemoveFile | kMakeChar |
                 kMakeDir | kMakeReg | kMakeSock | kMakeFifo | kMakeBlock | kMakeSym;
  if (abi >= 2) all |= kRefer;
  if (abi >= 3) all |= kTruncate;
  if (abi >= 5) all |= kIoctlDev;
  return all;
}

int addRule(int ruleset, const char* path, uint64_t access) {
  int fd = ::open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) return errno;
  PathBeneathAttr attr{access, fd};
  int err = ::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &attr, 0) == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

}  // namespace

int abiVersion() {
  long v = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1u /* LANDLOCK_CREATE_RULESET_VERSION */);
  return v < 0 ? 0 : static_cast<int>(v);
}

int restrictSelf(int abi, bool kvm) {
  const uint64_t handled = handledFs(abi);
  RulesetAttr attr{handled, 0, 0};
  size_t size = sizeof(uint64_t);
  if (abi >= 6) {
    // Abstract UNIX sockets and signals may not cross out of the sandbox's domain: the
    // command cannot connect to an abstract socket or signal a process it did not create.
    attr.scoped = kScopeAbstractUnix | kScopeSignal;
    size = sizeof(RulesetAttr);
  }
  int ruleset = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0));
  if (ruleset < 0) return errno;
  const uint64_t read_exec = kExecute | kReadFile | kReadDir;
  const uint64_t write_tree = handled & ~(kMakeChar | kMakeBlock);
  uint64_t device = kReadFile | kWriteFile;
  if (abi >= 3) device |= kTruncate;
  if (abi >= 5) device |= kIoctlDev;
  int err = addRule(ruleset, "/", read_exec);
  for (const char* dir : kWritableDirs)
    if (err == 0) err = addRule(ruleset, dir, write_tree);
  for (const char* dev : kWritableDevices)
    if (err == 0) err = addRule(ruleset, dev, device);
  if (kvm && err == 0) err = addRule(ruleset, "/dev/kvm", device);
  if (err == 0 && ::syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) err = errno;
  ::close(ruleset);
  return err;
}

}  // namespace corral::sandbox::landlock
