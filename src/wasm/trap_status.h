// SPDX-License-Identifier: Apache-2.0
// How the guest process tells `corral wasm run` why it ended: exit statuses from 200 up are
// the runtime's, never the guest's (proc_exit refuses 126 and above), so a guest cannot
// forge a trap or a host failure.
#pragma once

namespace corral::wasm {

inline constexpr int kTrapStatusBase = 200;  // 200 + wasm_rt_trap_t (1..8), 209: bad exit status
inline constexpr int kTrapBadExitStatus = 9;
inline constexpr int kHostFailureStatus = 250;  // the runner failed; it wrote one line to stderr
inline constexpr int kGuestMaxExitStatus = 125;
// What `corral wasm run` exits with when the guest trapped (128 + SIGILL: what the same
// program compiled natively would die of at a `ud2`).
inline constexpr int kExitTrap = 132;

// The trap kind of a guest process's exit status, or nullptr when it is not one.
inline const char* trapKind(int status) {
  switch (status - kTrapStatusBase) {
    case 1: return "out-of-bounds";
    case 2: return "integer-overflow";
    case 3: return "division-by-zero";
    case 4: return "invalid-conversion";
    case 5: return "unreachable";
    case 6: return "indirect-call";
    case 7: return "uncaught-exception";
    case 8: return "call-stack-exhausted";
    case kTrapBadExitStatus: return "invalid-exit-status";
    default: return nullptr;
  }
}

}  // namespace corral::wasm
