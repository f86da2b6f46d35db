// SPDX-License-Identifier: Apache-2.0
// Thin wrappers for the new mount API (open_tree, move_mount, mount_setattr, fsopen...):
// glibc 2.36 declares some of them, not all, so corral calls the syscalls directly.
#pragma once

#include <linux/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace corral::sandbox::mountapi {

struct MountAttr {
  uint64_t attr_set;
  uint64_t attr_clr;
  uint64_t propagation;
  uint64_t userns_fd;
};

inline int openTree(int dfd, const char* path, unsigned flags) {
  return static_cast<int>(::syscall(SYS_open_tree, dfd, path, flags));
}
inline int moveMount(int from_dfd, const char* from, int to_dfd, const char* to, unsigned flags) {
  return static_cast<int>(::syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags));
}
inline int setAttr(int dfd, const char* path, unsigned flags, uint64_t set) {
  MountAttr attr{set, 0, 0, 0};
  return static_cast<int>(::syscall(SYS_mount_setattr, dfd, path, flags, &attr, sizeof(attr)));
}
inline int fsOpen(const char* fs, unsigned flags) { return static_cast<int>(::syscall(SYS_fsopen, fs, flags)); }
inline int fsConfig(int fd, unsigned cmd, const char* key, const void* value, int aux) {
  return static_cast<int>(::syscall(SYS_fsconfig, fd, cmd, key, value, aux));
}
inline int fsMount(int fd, unsigned flags, unsigned attrs) {
  return static_cast<int>(::syscall(SYS_fsmount, fd, flags, attrs));
}

}  // namespace corral::sandbox::mountapi
