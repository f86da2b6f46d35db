// SPDX-License-Identifier: Apache-2.0
// Host cgroup detection: where corral may create per-run cgroups, per controller. Read-only.
#pragma once

#include <string>
#include <string_view>

namespace corral::sandbox::cgroup {

enum class Version { kNone, kV1, kV2 };
const char* versionName(Version version);  // "none", "v1", "v2"

struct ControllerSite {
  Version version = Version::kNone;
  std::string parent;   // existing dir under which corral makes "corral-<run id>" children
  std::string why_not;  // when kNone: one line, what is missing and the fix
  // v2 root layout only: `parent` is <cgroup2 root>/corral, which create() makes (if missing)
  // and enables the controller in, after enabling it in the root's subtree_control.
  bool make_parent = false;
};

struct HostCgroups {
  ControllerSite memory, pids, cpu;
  bool v1_memsw = false;        // v1 memory.memsw.* exists: swap can be capped with memory
  bool v2_memory_peak = false;  // v2 memory.peak exists (kernel 5.19+)
  std::string v2_self;          // our own cgroup's dir on the cgroup2 mount, "" when none
};

// Reads /proc/self/cgroup and /proc/self/mountinfo, then the cgroup files they point at
// (cgroup.controllers, cgroup.subtree_control, cgroup.procs, faccessat W_OK). No side effects.
HostCgroups detect();
// The same, from given file contents (the paths they name are still read): a test seam.
HostCgroups detectFrom(std::string_view proc_self_cgroup, std::string_view mountinfo);

}  // namespace corral::sandbox::cgroup
