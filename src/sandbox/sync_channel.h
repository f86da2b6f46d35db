// SPDX-License-Identifier: Apache-2.0
// The parent<->sandbox sync protocol: fixed-size messages on a SOCK_SEQPACKET pair,
// optionally carrying one fd. Child-side calls are async-signal-safe.
#pragma once

#include <cstdint>

namespace corral::sandbox::sync {

enum class Type : int32_t {
  kMapsReady = 1,     // parent -> init: id maps written, go on with setup
  kWorkspaceFd,       // init -> parent: the detached /workspace mount (fd attached)
  kGo,                // parent -> init: workspace staged and cgroup joined; start the command
  kSetupFailed,       // init -> parent: step + errno; init exits
  kExecFailed,        // command -> parent: step + errno before or at execve
  kCommandExited,     // init -> parent: the command's wait status
};

// Steps outside the mount plan, reported as negative step numbers.
enum ChildStep : int32_t {
  kStepSync = -1, kStepDumpable = -2, kStepWorkspaceTmpfs = -3, kStepHostname = -4, kStepLoopback = -5,
  kStepCgroupNs = -6, kStepFork = -7, kStepSetsid = -8, kStepChdir = -9, kStepRlimits = -10,
  kStepCaps = -11, kStepLandlock = -12, kStepSeccomp = -13, kStepExec = -14, kStepSignals = -15, kStepCredentials = -16, kStepCgroupAttach = -17,
  kStepNetns = -18,
};
const char* childStepName(int32_t step);

struct Message {
  Type type;
  int32_t step = 0;
  int32_t err = 0;
  int32_t status = 0;
};

// Returns 0 or errno. fd < 0 sends no fd.
int send(int sock, const Message& m, int fd = -1);
// Returns 0, errno, or EPIPE on orderly EOF (the peer died). *fd receives a passed fd or -1
// (without fd, a passed one is closed). flags: recvmsg's (MSG_DONTWAIT, MSG_PEEK).
int recv(int sock, Message* m, int* fd = nullptr, int flags = 0);

}  // namespace corral::sandbox::sync
