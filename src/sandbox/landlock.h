// SPDX-License-Identifier: Apache-2.0
// Landlock: defence in depth under the mount namespace. Reads and execution stay allowed
// everywhere in the sandbox view; writes only beneath the writable places.
#pragma once

namespace corral::sandbox::landlock {

// The kernel's Landlock ABI version, 0 when Landlock is absent or disabled.
int abiVersion();

// Paths (inside the new root) that stay writable; fixed, so the child needs no allocation.
inline constexpr const char* kWritableDirs[] = {"/workspace", "/tmp", "/dev/shm"};
// /dev/pts: the sandbox's own devpts instance (devpts.h): ptmx and the terminals it hands out.
inline constexpr const char* kWritableDevices[] = {"/dev/null",    "/dev/zero", "/dev/full",
                                                   "/dev/random",  "/dev/urandom", "/dev/pts"};

// Child side, after pivot_root and with no_new_privs set: builds and enforces the ruleset
// for `abi` (> 0). Also scopes abstract UNIX sockets and signals to the sandbox on ABI >= 6.
// `kvm`: /dev/kvm is in the sandbox (QEMU's jail under KVM) and opens like the devices above.
// Returns 0 or errno.
int restrictSelf(int abi, bool kvm = false);

}  // namespace corral::sandbox::landlock
