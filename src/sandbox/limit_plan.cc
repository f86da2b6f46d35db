// SPDX-License-Identifier: Apache-2.0
// Limit mechanism selection (pure: host facts in, decision out).
#include "sandbox/limit_plan.h"

#include <sys/resource.h>

#include <algorithm>

namespace corral::sandbox {
namespace {

bool accepted(const Limits& l, Limit which) {
  return std::find(l.allow_weaker.begin(), l.allow_weaker.end(), which) != l.allow_weaker.end();
}

std::string cgroupMechanism(cgroup::Version v) { return std::string("cgroup-") + cgroup::versionName(v); }

}  // namespace

Result<LimitDecision> planLimits(const Limits& l, const cgroup::HostCgroups& host) {
  LimitDecision d;
  d.rlimits.add(RLIMIT_CORE, 0);  // no core files: nothing of the sandbox's memory lands on disk

  if (l.memory_bytes) {
    if (host.memory.version != cgroup::Version::kNone) {
      d.need_cgroup = true;
      d.cgroup.memory_max = *l.memory_bytes;
      d.uses.push_back({Limit::kMemory, *l.memory_bytes, cgroupMechanism(host.memory.version)});
    } else if (accepted(l, Limit::kMemory)) {
      // Weaker: caps each process's address space, not the sandbox's total resident memory.
      d.rlimits.add(RLIMIT_AS, *l.memory_bytes);
      d.uses.push_back({Limit::kMemory, *l.memory_bytes, "rlimit-as"});
    } else {
      return Error(Errc::kUnsupported, "--memory: no cgroup memory controller can enforce it (" + host.memory.why_not +
                                           "); --allow-weaker memory accepts a per-process RLIMIT_AS instead");
    }
  } else {
    d.uses.push_back({Limit::kMemory, std::nullopt, "none"});
  }

  // RLIMIT_NPROC counts tasks per (user namespace, uid) since Linux 5.14, and every sandbox
  // has a user namespace of its own: it caps this sandbox's processes and threads, rootless
  // and without a cgroup attach. +1 for corral's init, which runs under the same uid.
  const rlim_t nproc = static_cast<rlim_t>(l.pids) + 1;
  d.rlimits.add(RLIMIT_NPROC, nproc);
  std::string pids_mech = "rlimit-nproc";
  if (d.need_cgroup && host.pids.version != cgroup::Version::kNone) {
    d.cgroup.pids_max = static_cast<uint32_t>(nproc);
    pids_mech = cgroupMechanism(host.pids.version) + "+rlimit-nproc";
  }
  d.uses.push_back({Limit::kPids, l.pids, pids_mech});

  if (l.cpu_time) {
    rlim_t secs = static_cast<rlim_t>((l.cpu_time->count() + 999) / 1000);
    d.rlimits.add(RLIMIT_CPU, secs);
    d.uses.push_back({Limit::kCpuTime, static_cast<uint64_t>(secs) * 1000, "rlimit-cpu"});
  } else {
    d.uses.push_back({Limit::kCpuTime, std::nullopt, "none"});
  }
  if (l.timeout) d.uses.push_back({Limit::kTimeout, static_cast<uint64_t>(l.timeout->count()), "timer"});
  else d.uses.push_back({Limit::kTimeout, std::nullopt, "none"});
  d.rlimits.add(RLIMIT_FSIZE, l.file_size_bytes);
  d.uses.push_back({Limit::kFileSize, l.file_size_bytes, "rlimit-fsize"});
  d.rlimits.add(RLIMIT_NOFILE, l.open_files);
  d.uses.push_back({Limit::kOpenFiles, l.open_files, "rlimit-nofile"});
  d.uses.push_back({Limit::kTmpSize, l.tmp_bytes, "tmpfs"});
  d.uses.push_back({Limit::kWorkspaceSize, l.workspace_bytes, "tmpfs"});
  return d;
}

}  // namespace corral::sandbox
