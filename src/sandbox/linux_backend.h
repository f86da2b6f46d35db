// SPDX-License-Identifier: Apache-2.0
// The namespace backend: runs one SandboxSpec and reports. The only file that knows the
// order of the facilities (userns, mountns, pidns + init, netns, cgroups, rlimits, caps,
// landlock, seccomp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "sandbox/spec.h"

namespace corral::sandbox {

struct RunOptions {
  bool timing = false;  // print a per-phase breakdown to stderr
  // Called while the sandbox is built, before its command may start: an error refuses the run
  // (the sandbox is torn down, the command never runs). What is started beside the sandbox
  // (`--net proxy`'s proxy process) is waited for here, so it starts side by side with it.
  // `signals` is corral's signalfd of the signals it forwards: a hook that waits must watch it
  // too, so that a Ctrl-C meanwhile ends the launch instead of waiting for the hook.
  std::function<Result<void>(int signals)> before_command;
  // A session (session_init.h): init starts no command; once the sandbox is built this runs
  // the session's whole life (it talks to init over `sock`), and the sandbox ends when it returns.
  struct SessionIo {
    int sock;     // the sync socket, now speaking session_protocol.h
    int pidfd;    // init's
    int ws_root;  // the /workspace tmpfs, detached
    int signals;  // as before_command's
  };
  std::function<void(const SessionIo&)> session;
  // Called once the command exited normally and every sandbox process is gone, with the fd of
  // the sandbox's /workspace, before the declared outputs are copied back: `corral run` keeps a
  // root task's work for its next command this way (agent/workspace_mirror.h).
  std::function<void(int ws_root)> after_command;
};

// argv[0] against PATH (from env, else the default), in execvp's order.
std::vector<std::string> execCandidates(const std::vector<std::string>& argv, const std::vector<std::string>& env);

// corral's own argv/environment strings are zeroed in the sandbox's init, so /proc/1/cmdline
// and /proc/1/environ show nothing of the caller. main() hands them over once.
void rememberProcessArgs(int argc, char** argv);

// An Error means corral failed or refused before the command ran (exit 125). Otherwise the
// report says how the command ended and report.exit_code is what corral should exit with.
Result<RunReport> runLinux(const SandboxSpec& spec, const RunOptions& options);

}  // namespace corral::sandbox
