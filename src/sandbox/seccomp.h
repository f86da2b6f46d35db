// SPDX-License-Identifier: Apache-2.0
// seccomp: compiles the policy's allowlist to BPF (parent) and installs it (child).
#pragma once

#include <linux/filter.h>

#include <vector>

#include "base/result.h"
#include "policy/seccomp_policy.h"

namespace corral::sandbox::seccomp {

// One classic-BPF program for the native x86_64 ABI. Any other audit arch (int $0x80) and any
// x32 syscall number kill the process.
struct Program {
  std::vector<struct sock_filter> insns;
};

// Parent, before clone: validates the policy and compiles it with libseccomp (allocates).
// The error names the syscall that failed to resolve or to compile.
Result<Program> compile(const policy::seccomp::Policy& policy);

// Child, between clone and execve: async-signal-safe, no allocation, no logging. Requires
// no_new_privs to be set already (refuses with EPERM otherwise, even with CAP_SYS_ADMIN, so
// the filter can never outlive a setuid exec). Returns 0 or an errno.
int install(const Program& program);

}  // namespace corral::sandbox::seccomp
