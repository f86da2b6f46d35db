// SPDX-License-Identifier: Apache-2.0
// The guest's disks and boot files: kernel choice, the initramfs (agent + modules), the
// read-only erofs runtime and the workspace ext4 image. The first two are cached by content
// hash in a directory only this user can write.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace corral::vm::images {

// $CORRAL_VM_CACHE, else $XDG_CACHE_HOME/corral/vm, else $HOME/.cache/corral/vm, else
// $TMPDIR/corral-vm-<uid>. Created 0700; refused unless it is a directory this user owns
// that nobody else can write (another user could plant an image that would be booted).
Result<std::string> cacheDir();
// The same path, neither created nor checked.
std::string cachePath();

// The kernel release in a bzImage's setup header ("6.1.0-57-amd64").
Result<std::string> kernelRelease(const std::string& bzimage);

// The newest /boot/vmlinuz-* whose modules are installed in /lib/modules.
Result<std::string> defaultKernel();

// The kernel a run without --vm-kernel boots, and why (chosen by boot time, issue 23): the
// minimal kernel scripts/build-vm-kernel.sh cached (the most recent vmlinuz-minimal-* in the
// cache that is a regular file of this user nobody else can write, not a symlink), else
// defaultKernel(). CORRAL_VM_KERNEL=debian forces Debian's; any other value is an error.
// Never creates the cache (`corral doctor` asks this).
struct KernelChoice {
  std::string path;
  std::string kind;  // "minimal" or "debian"
  std::string why;
};
Result<KernelChoice> chooseKernel();

// A cpio (newc) initramfs holding the agent as /init and the kernel modules the guest needs
// (virtio-mmio, -blk, -console, -rng, erofs, ext4 and their dependencies, in load order).
Result<std::string> initramfs(const std::string& cache, const std::string& agent, const std::string& release);

// The read-only runtime: /usr of Debian's Essential packages and their dependency closure,
// as installed here, in an erofs image. Keyed by the package versions and the layout.
Result<std::string> rootfs(const std::string& cache);

// An ext4 image of `bytes` at out, filled from dir (empty when dir is ""): mkfs.ext4 -d.
Result<void> workspaceImage(const std::string& dir, uint64_t bytes, const std::string& out);

}  // namespace corral::vm::images
