// SPDX-License-Identifier: Apache-2.0
// QEMU's jail: the namespace-sandbox spec one QEMU runs in (the jailer role), and the KVM
// device node it gets under KVM. Separate from the launch so the tests can build the very
// jail a run would use.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "base/result.h"
#include "sandbox/spec.h"
#include "vm/vm_options.h"

namespace corral::vm {

// What QEMU boots, as host paths (in the run directory).
struct JailFiles {
  std::string qemu;                     // the QEMU binary (in the runtime the jail shows)
  std::string kernel, initrd, rootfs;   // bound read-only at /vm/kernel, /vm/initrd, /vm/rootfs
  std::string disk_dir;                 // holds workspace.img, staged as QEMU's /workspace
  std::optional<std::string> kvm_node;  // under KVM: the node mounted as the jail's /dev/kvm
  std::optional<std::string> net_socket;  // --net proxy: the relay's listening socket, bound at /vm/net
  std::optional<std::string> qmp_socket;  // snapshot save or restore: corral's QMP listener, bound at /vm/qmp
  bool incoming = false;                  // a restore: QEMU waits for the migration stream
};

// The jail's spec: own user, mount, pid, network and IPC namespaces, seccomp, no
// capabilities, the files above and the read-only runtime; /dev/kvm only when kvm_node is set,
// which also makes QEMU use -accel kvm. The caller sets stdio.
sandbox::SandboxSpec qemuJailSpec(const JailFiles& files, const VmOptions& vm, uint64_t guest_workspace_bytes,
                                  std::chrono::milliseconds watchdog, uint64_t qemu_memory);

// The KVM node for a jail built in run_dir: the host's /dev/kvm for a non-root caller (its
// own access to it is what counts); as root a fresh node in run_dir owned by the jail's host
// uid, mode 0600, since that uid is not in the kvm group (Firecracker's jailer does the same).
Result<std::string> kvmNode(const std::string& run_dir);

}  // namespace corral::vm
