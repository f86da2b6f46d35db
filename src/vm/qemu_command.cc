// SPDX-License-Identifier: Apache-2.0
// QEMU's argv for one microVM (qemu_command.h).
#include "vm/qemu_command.h"

namespace corral::vm {

std::string kernelCommandLine(bool kvm) {
  // quiet: no console is attached, and printing costs boot time. panic=-1: if the agent ever
  // exits, the guest reboots at once, which -no-reboot turns into QEMU's exit.
  std::string cmd = "quiet panic=-1";
  if (!kvm) cmd += " tsc_early_khz=2000000 lpj=4000000";
  return cmd;
}

std::vector<std::string> qemuArgs(const QemuPlan& p) {
  std::vector<std::string> a = {
      p.qemu,
      "-M", "microvm,x-option-roms=off,isa-serial=off,rtc=off",
      "-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
      // tb-size: TCG's translation cache (MiB), 1 GiB by default, which would not fit under
      // the jail's RLIMIT_AS when no memory cgroup caps QEMU instead.
      "-accel", p.kvm ? "kvm" : "tcg,tb-size=64",
      "-cpu", p.kvm ? "host" : "max",
      "-m", std::to_string(p.memory_mib) + "M",
      "-smp", std::to_string(p.cpus),
      "-kernel", p.kernel,
      "-initrd", p.initrd,
      "-append", kernelCommandLine(p.kvm),
      // QEMU's own seccomp filter on top of the jail's: no exec, no privilege change, no
      // setting of priorities or affinity, no obsolete system calls.
      "-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
      // vda: the runtime, read-only to QEMU and to the guest.
      "-drive", "id=root,file=" + p.rootfs + ",format=raw,if=none,readonly=on",
      "-device", "virtio-blk-device,drive=root",
      // vdb: the workspace, a copy in the jail's own tmpfs: the guest's writes never reach a
      // file the host reads.
      "-drive", "id=ws,file=" + p.workspace + ",format=raw,if=none",
      "-device", "virtio-blk-device,drive=ws",
      "-device", "virtio-rng-device",
      // Port 0 is reserved for a console, which there is none of: corral.ctl is port 1, the
      // relay's corral.net (--net proxy) port 2.
      "-device", p.net_socket.empty() ? "virtio-serial-device,max_ports=2" : "virtio-serial-device,max_ports=3",
      "-chardev", "stdio,id=ctl,signal=off",
      "-device", "virtserialport,chardev=ctl,name=corral.ctl",
  };
  if (!p.net_socket.empty())
    a.insert(a.end(), {"-chardev", "socket,id=net,path=" + p.net_socket, "-device", "virtserialport,chardev=net,name=corral.net"});
  // The monitor is no guest device: a snapshot made with it restores into the same layout.
  if (!p.qmp_socket.empty()) a.insert(a.end(), {"-chardev", "socket,id=qmp,path=" + p.qmp_socket, "-mon", "chardev=qmp,mode=control"});
  if (p.incoming) a.insert(a.end(), {"-incoming", "defer"});
  return a;
}

}  // namespace corral::vm
