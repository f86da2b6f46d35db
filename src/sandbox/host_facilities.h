// SPDX-License-Identifier: Apache-2.0
// What the host offers the namespace backend, probed without side effects on the host.
#pragma once

#include <string>
#include <vector>

#include "sandbox/host_cgroups.h"

namespace corral::sandbox {

struct Facility {
  std::string name;    // "user namespaces", "landlock", ...
  bool available = false;
  bool required = false;  // a default `corral exec` is refused without it
  std::string detail;  // version, path, or why not and the fix
};

struct HostFacilities {
  std::vector<Facility> facilities;
  cgroup::HostCgroups cgroups;
  int landlock_abi = 0;
};

// Probes each facility: user namespaces by cloning a throwaway child with every namespace
// corral uses, the new mount API, seccomp, landlock, cgroups per controller, /dev/kvm,
// overlayfs. Creates nothing that outlives the call.
HostFacilities probeHost();

// uname's release is at least major.minor.
bool kernelAtLeast(int major, int minor);
// /proc/self/status says "Seccomp: 2": corral itself runs under a filter (a container's?).
bool underSeccompFilter();
// What to tell a user whose kernel has a call that answered ENOSYS: a seccomp filter blocks
// it (says so outright when /proc/self/status shows one on corral itself), and the fix.
std::string seccompBlockHint();

}  // namespace corral::sandbox
