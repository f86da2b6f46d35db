// SPDX-License-Identifier: Apache-2.0
// The seccomp allowlist as data: which syscalls a sandboxed command may make, and why.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace corral::policy::seccomp {

enum class Action { kAllow, kErrno };

// One comparison on one syscall argument, with libseccomp's meaning: kMaskedEq tests
// (arg & mask) == value; every other op compares the full 64-bit value, unsigned.
struct ArgCond {
  enum class Op { kEq, kNe, kMaskedEq, kLt, kLe, kGt, kGe };
  unsigned arg;
  Op op;
  uint64_t value;
  uint64_t mask = 0;
};

// A rule matches when every cond holds (an empty list always matches). Per syscall the rules
// take one of three shapes, which validate() enforces:
//   - one unconditional kAllow, plus optional conditional kErrno "refusals" that take
//     precedence over it (how "ioctl, except TIOCSTI" is spelled);
//   - one or more conditional kAllow rules, OR-ed; anything else gets the default errno;
//   - one unconditional kErrno: an explicit, documented denial.
// Syscalls named by no rule get Policy::default_errno.
struct Rule {
  std::string_view syscall;  // resolved to a number by libseccomp at compile time
  Action action;
  int err = 0;  // kErrno only
  std::vector<ArgCond> conds;
  std::string_view reason;
};

struct Policy {
  std::vector<Rule> rules;
  int default_errno;  // ENOSYS, so glibc falls back to an older syscall where it has one
};

// What every sandboxed command gets: default-deny, modelled on the container-runtime default.
Policy sandboxPolicy();

// Checks the shape rules above and libseccomp 2.5.4's limits (at most one cond per argument in
// a rule: a second one is rejected with EINVAL). The error names the offending syscall.
Result<void> validate(const Policy& policy);

// The reference meaning of a valid policy for one call: the compiled BPF must agree with it.
struct Verdict {
  Action action;
  int err;  // 0 when allowed
  bool operator==(const Verdict&) const = default;
};
using SyscallArgs = std::array<uint64_t, 6>;
Verdict evaluate(const Policy& policy, std::string_view syscall, const SyscallArgs& args = {});

bool condHolds(const ArgCond& cond, const SyscallArgs& args);

}  // namespace corral::policy::seccomp
