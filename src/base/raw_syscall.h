// SPDX-License-Identifier: Apache-2.0
// System calls for a task that shares another one's memory (CLONE_VM) and runs beside it: it
// must leave everything of the other's alone, errno included. glibc's wrappers would set the
// other task's errno (the two share one TLS block); these return -errno instead and touch
// nothing. x86_64 only, as is the seccomp policy (seccomp.cc refuses other architectures).
#pragma once

namespace corral {

// Such a task runs on a stack ASan did not allocate: a call to a noreturn function would make
// ASan warn on stderr about "the rest of the stack" (see sandbox/child.cc). It touches no heap.
#define CORRAL_ON_OWN_STACK __attribute__((no_sanitize("address")))

CORRAL_ON_OWN_STACK inline long rawSyscall(long nr, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0) {
  long ret;
  register long r10 __asm__("r10") = a4;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10) : "rcx", "r11", "memory");
  return ret;
}

}  // namespace corral
