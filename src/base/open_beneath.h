// SPDX-License-Identifier: Apache-2.0
// openat2 confined to a directory: the one way corral opens a path it did not choose; and
// without symlinks, for a path it resolved itself earlier.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace corral {

// openat2(dir, path) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
// RESOLVE_NO_XDEV and O_CLOEXEC added to flags: no component may be a symlink, leave dir
// (`..` above it, an absolute path) or cross a mount. Returns the fd, or -1 with errno set.
int openBeneath(int dir, const char* path, uint64_t flags, mode_t mode = 0);

// openat2(AT_FDCWD, path) with RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS and O_CLOEXEC added:
// a path the caller already resolved (realpath) that must not have gained a symlink since.
int openNoSymlinks(const char* path, uint64_t flags);

}  // namespace corral
