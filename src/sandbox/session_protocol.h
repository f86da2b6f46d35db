// SPDX-License-Identifier: Apache-2.0
// The wire format between a session's shim (on the host) and its init (pid 1 inside): fixed
// little structs on the sandbox's SOCK_SEQPACKET sync socket, after setup is done.
#pragma once

#include <cstdint>

namespace corral::sandbox::session {

inline constexpr uint32_t kMagic = 0x53455331;  // "SES1": no sync::Message is this size or tag

enum class Op : uint32_t {
  kSpawn = 1,    // shim -> init: fds [memfd, stdin, stdout, stderr], or [memfd] alone with a
                 // tty (init makes the terminal); memfd holds the strings
  kSignal,       // shim -> init: signal the command's process group (pid, sig)
  kSpawned,      // init -> shim: cmd, pid (> 0) or -errno; with a tty, the terminal's master fd
  kExited,       // init -> shim: cmd, wait status
};

struct Packet {
  uint32_t magic = kMagic;
  Op op = Op::kSpawn;
  uint32_t cmd = 0;     // the daemon's command number
  int32_t pid = 0;      // kSpawned: pid or -errno; kSignal: the target
  int32_t value = 0;    // kExited: wait status; kSignal: the signal
  uint32_t bytes = 0;   // kSpawn: bytes used in the memfd
  uint32_t argc = 0;    // kSpawn: strings in the memfd: argc argv, envc env, the cwd, then
  uint32_t envc = 0;    //         pathc exec candidates (argv[0] against PATH), NUL-ended
  uint32_t pathc = 0;
  uint32_t tty = 0;     // kSpawn: 0, or rows << 16 | cols of a new terminal for the command
};

// Bounds init holds to (its arrays are static: it allocates nothing).
inline constexpr uint32_t kMaxStrings = 4096;
inline constexpr uint32_t kMaxSpawnBytes = 1u << 20;
inline constexpr uint32_t kMaxCommands = 1024;  // commands running at once

}  // namespace corral::sandbox::session
