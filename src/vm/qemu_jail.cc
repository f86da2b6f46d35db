// SPDX-License-Identifier: Apache-2.0
// QEMU's jail (qemu_jail.h).
#include "vm/qemu_jail.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "sandbox/userns.h"
#include "vm/qemu_command.h"

namespace corral::vm {

sandbox::SandboxSpec qemuJailSpec(const JailFiles& files, const VmOptions& vm, uint64_t guest_workspace_bytes,
                                  std::chrono::milliseconds watchdog, uint64_t qemu_memory) {
  QemuPlan plan;
  plan.qemu = files.qemu;
  plan.kvm = files.kvm_node.has_value();
  plan.memory_mib = vm.memory_bytes >> 20;
  plan.cpus = vm.cpus;
  plan.kernel = "/vm/kernel";
  plan.initrd = "/vm/initrd";
  plan.rootfs = "/vm/rootfs";
  plan.workspace = "/workspace/workspace.img";
  plan.incoming = files.incoming;
  if (files.qmp_socket) plan.qmp_socket = "/vm/qmp";
  sandbox::SandboxSpec q;
  q.argv = qemuArgs(plan);
  q.env = {"PATH=/usr/bin:/bin", "TMPDIR=/tmp", "HOME=/workspace"};
  q.ro_binds = {{files.kernel, "/vm/kernel"}, {files.initrd, "/vm/initrd"}, {files.rootfs, "/vm/rootfs"}};
  // A socket on a read-only bind still takes connect(2): the kernel's EROFS check is for
  // regular files, directories and symlinks only.
  if (files.net_socket) {
    plan.net_socket = "/vm/net";
    q.argv = qemuArgs(plan);
    q.ro_binds.push_back({*files.net_socket, "/vm/net"});
  }
  if (files.qmp_socket) q.ro_binds.push_back({*files.qmp_socket, "/vm/qmp"});
  q.workspace = files.disk_dir;
  q.kvm_device = files.kvm_node;
  q.limits.memory_bytes = qemu_memory;
  // Without a memory cgroup the cap is RLIMIT_AS on QEMU, which the run reports.
  q.limits.allow_weaker = {sandbox::Limit::kMemory};
  q.limits.pids = 64 + vm.cpus;
  q.limits.timeout = watchdog;
  q.limits.tmp_bytes = 1u << 20;
  q.limits.file_size_bytes = guest_workspace_bytes + (1u << 20);
  q.limits.workspace_bytes = guest_workspace_bytes + (1u << 20);
  return q;
}

Result<std::string> kvmNode(const std::string& run_dir) {
  if (::getuid() != 0) return std::string("/dev/kvm");
  const std::string node = run_dir + "/kvm";
  if (::mknod(node.c_str(), S_IFCHR | 0600, makedev(10, 232)) != 0) return sysError("mknod " + node);
  const uid_t jail_uid = sandbox::userns::planIdMap(0, 0).host_uid;
  if (::chown(node.c_str(), jail_uid, jail_uid) != 0) return sysError("chown " + node);
  return node;
}

}  // namespace corral::vm
