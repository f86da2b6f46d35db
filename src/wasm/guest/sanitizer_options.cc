// SPDX-License-Identifier: Apache-2.0
// Sanitizer defaults for a binary that runs inside the sandbox: no leak check at exit.
//
// LeakSanitizer stops the world with ptrace and reads /proc/self/task before it can report,
// and the sandbox's seccomp policy refuses ptrace: in a sanitized build (CORRAL_SANITIZE) the
// check itself dies at exit ("LeakSanitizer has encountered a fatal error") and turns every
// guest's status into 1. AddressSanitizer and UBSan still check every access and operation;
// only the exit-time leak scan is given up. In an unsanitized build nothing reads this.
extern "C" {
// NOLINTNEXTLINE(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp): the sanitizer runtime's hook
const char* __lsan_default_options() { return "detect_leaks=0"; }
// NOLINTNEXTLINE(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp): the sanitizer runtime's hook
const char* __asan_default_options() { return "detect_leaks=0"; }
}
