// SPDX-License-Identifier: Apache-2.0
// `corral exec --net proxy` run by the launcher: the egress proxy lives in a corral-core
// process started beside the sandbox, so corral-core's start (its loader, relocations and
// page faults: most of the cost of a proxied launch, docs/benchmarks.md) runs while the
// sandbox is built instead of before it.
//
// The launcher decides everything the sandbox sees before the clone: the channel (a
// SOCK_SEQPACKET pair, its end as SandboxSpec::proxy.channel), the proxy variables and one
// placeholder per lease, drawn from random bytes it then hands to the proxy, which derives the
// same placeholders from them. The command starts only after the proxy says it serves
// (ExecEgress::ready, waited for before init's go): a credential whose variable is unset, a
// bad CA bundle or a proxy that cannot start refuses the run as before, with nothing run.
//
//   corral-core __egress-serve PARENT_PID EXEC_ARGS...
//   fd 3: control, a SOCK_STREAM socket. Launcher -> proxy: 16 random bytes per lease (in
//         --credential order); later, end of file = stop. Proxy -> launcher: one line,
//         "ready" or "error MESSAGE"; after the stop, nothing more when every event was
//         recorded (exit status 0), else "error MESSAGE"; then end of file.
//   fd 4: the proxy's end of the sandbox's channel.
//   fd 5: the events file, a memfd the launcher made and reads after the proxy has ended.
//         The proxy appends one line per event the moment it records it: "egress JSON" or
//         "lease JSON" (the report's entries, in order), and at the stop one "overflow JSON"
//         when there were more than it records one by one. What it saw is therefore kept even
//         when it dies mid-run: the launcher reports those events, with the run failed.
// The proxy process dies with the launcher (PR_SET_PDEATHSIG, checked against PARENT_PID)
// and ignores the terminal's signals: Ctrl-C reaches the command through the launcher, and
// the proxy stays until the launcher stops it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "cli/exec.h"

namespace corral::cli {

inline constexpr char kEgressServeCommand[] = "__egress-serve";
// Where the proxy process finds its two sockets (the protocol above).
inline constexpr int kEgressControlFd = 3;
inline constexpr int kEgressChannelFd = 4;
inline constexpr int kEgressEventsFd = 5;
// fd 7 (--ssh-key only): the agent's listening UNIX socket, made by the launcher (its file is
// bound into the sandbox before the clone). fd 6 is the exec status pipe of the start.
inline constexpr int kEgressAgentFd = 7;

// Launcher side: starts the proxy process for `inv` (parsed from exec_args, the words after
// "exec") and points inv.spec at it.
Result<std::unique_ptr<ExecEgress>> startEgressProcess(ExecInvocation& inv, const std::vector<std::string>& exec_args);

// corral-core side: argv after "__egress-serve". Exit status 0 when stopped as above.
int egressServeMain(const std::vector<std::string>& args);

}  // namespace corral::cli
