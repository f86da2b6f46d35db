// SPDX-License-Identifier: Apache-2.0
#include "base/open_beneath.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace corral {

namespace {

int openat2With(int dir, const char* path, uint64_t flags, mode_t mode, uint64_t resolve) {
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.mode = mode;
  how.resolve = resolve;
  return static_cast<int>(::syscall(SYS_openat2, dir, path, &how, sizeof how));
}

}  // namespace

int openBeneath(int dir, const char* path, uint64_t flags, mode_t mode) {
  return openat2With(dir, path, flags, mode, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV);
}

int openNoSymlinks(const char* path, uint64_t flags) {
  return openat2With(AT_FDCWD, path, flags, 0, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

}  // namespace corral
