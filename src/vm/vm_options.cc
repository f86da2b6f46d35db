// SPDX-License-Identifier: Apache-2.0
// The VM backend's refusals: each names the option and the reason it cannot be honoured.
#include "vm/vm_options.h"

namespace corral::vm {
namespace {
Error refuse(const std::string& what) { return Error(Errc::kUnsupported, what); }
}  // namespace

Result<void> checkSpec(const sandbox::SandboxSpec& spec, const VmOptions& vm, bool net_proxy) {
  if (!spec.ro_binds.empty())
    return refuse("--ro-bind: the VM backend shares no host files with the guest (no 9p, no virtio-fs); "
                  "copy them in with --workspace");
  if (!spec.rw_binds.empty()) return refuse("read-write binds: the VM backend shares no host files with the guest");
  // --net proxy is relayed over the corral.net port to the channel the egress proxy made;
  // a channel without --net proxy would be one nobody in exec asked for.
  if (spec.proxy.channel >= 0 && !net_proxy) return refuse("a proxy channel: only with --net proxy");
  if (spec.stdio.in >= 0 || spec.stdio.out >= 0 || spec.stdio.err >= 0)
    return refuse("replacement stdio fds: the VM backend relays only the caller's own stdin, stdout and stderr");
  if (spec.kvm_device) return refuse("a KVM device for the command: only QEMU's own jail gets /dev/kvm");
  if (spec.stage_only) return refuse("a narrowed workspace stage: not available with --backend vm");
  if (spec.limits.memory_bytes && *spec.limits.memory_bytes > vm.memory_bytes)
    return refuse("--memory: larger than the VM (--vm-memory " + std::to_string(vm.memory_bytes >> 20) + "M)");
  if (vm.memory_bytes < kMinMemoryBytes || vm.memory_bytes > kMaxMemoryBytes)
    return refuse("--vm-memory: must be between 128M and 64G");
  if (vm.cpus < 1 || vm.cpus > kMaxCpus) return refuse("--vm-cpus: must be between 1 and 64");
  if (spec.limits.workspace_bytes < (8ull << 20))
    return refuse("--workspace-size: the VM's workspace disk needs at least 8M (an ext4 image)");
  return {};
}

}  // namespace corral::vm
