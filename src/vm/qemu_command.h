// SPDX-License-Identifier: Apache-2.0
// QEMU's command line for one microVM: microvm machine, virtio-mmio devices only, no
// defaults, direct kernel boot, QEMU's own seccomp sandbox. Pure: a plan in, argv out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace corral::vm {

struct QemuPlan {
  std::string qemu;        // the binary (a path inside QEMU's jail)
  bool kvm = false;        // else TCG
  uint64_t memory_mib = 512;
  uint32_t cpus = 1;
  std::string kernel, initrd, rootfs, workspace;  // paths inside the jail
  // --net proxy: the relay's UNIX socket inside the jail, QEMU's corral.net port connects to
  // it (a chardev socket, no -netdev: QEMU still has no network). Empty: no second port.
  std::string net_socket;
  // Snapshots (snapshot.h): QMP on a UNIX socket QEMU connects to (empty: no monitor), and
  // -incoming defer for a restore (the stream comes as an fd over QMP).
  std::string qmp_socket;
  bool incoming = false;
};

// The guest kernel's command line: as short as Debian's kernel allows. Under TCG the TSC and
// the delay loop are given, not calibrated: microvm has no PIT or HPET to calibrate against,
// and the kernel otherwise waits forever for a timer it cannot measure.
std::string kernelCommandLine(bool kvm);

// The control channel is QEMU's stdin and stdout (chardev stdio): the jail passes no other fd,
// so the relay's port is a socket QEMU connects to at start.
std::vector<std::string> qemuArgs(const QemuPlan& plan);

}  // namespace corral::vm
