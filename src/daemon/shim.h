// SPDX-License-Identifier: Apache-2.0
// A session's shim: the host process that owns one session's sandbox, outliving the daemon.
// The daemon starts it detached; it builds the sandbox (runLinux in session mode), then serves
// the daemon over DIR/control.sock and spools each command's output and status under DIR/cmds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace corral::daemon {

// Not a user command: `corral-core __session-shim DIR`, config JSON on stdin, one JSON line
// ({"ok":true,...} or {"error":"..."}) on stdout once the sandbox is up or has failed.
inline constexpr char kShimCommand[] = "__session-shim";
int shimMain(const std::vector<std::string>& args);

// Per command, per stream: bytes kept in its spool file; the rest are counted, not kept.
inline constexpr uint64_t kSpoolCapBytes = 8ull << 20;
// Control messages (JSON) in either direction.
inline constexpr size_t kMaxControlBytes = 1u << 20;
// This thread's receive buffer for one control message, kMaxControlBytes long: allocated once
// and never zeroed as a whole. A zeroed 1 MiB string per message (as each receiver made
// before) cost every control call a memset and a new mapping's page faults, about 0.1 ms on
// each side. Callers copy out the bytes they received and wipe those (a rotate_lease holds a
// credential value).
char* controlBuffer();

// Field 22 of /proc/PID/stat (clock ticks after boot): with the pid, names one process.
uint64_t processStartTime(int pid);
// Compares two secrets in time that does not depend on where they differ.
bool sameSecret(const std::string& a, const std::string& b);

}  // namespace corral::daemon
