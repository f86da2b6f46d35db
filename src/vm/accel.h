// SPDX-License-Identifier: Apache-2.0
// Which accelerator a VM would get here: KVM when /dev/kvm really runs a guest, else QEMU's
// TCG emulation (only with --allow-weaker kvm), else none. Probed in a child, in milliseconds.
#pragma once

#include <string>

namespace corral::vm {

struct AccelProbe {
  enum class Kind { kKvm, kTcgOnly, kUnavailable } kind = Kind::kUnavailable;
  std::string qemu;    // the QEMU binary, when found
  std::string detail;  // why KVM is unusable, or why there is no VM at all
  std::string fix;     // what would make it better ("" when kvm)
};

const char* accelName(AccelProbe::Kind k);  // "kvm", "tcg only", "unavailable"

// KVM counts as usable only if a throwaway VM created through /dev/kvm executes guest code
// and exits as real hardware does: a /dev/kvm that opens but cannot run a guest is "tcg only".
AccelProbe probeAccel();

}  // namespace corral::vm
