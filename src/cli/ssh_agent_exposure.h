// SPDX-License-Identifier: Apache-2.0
// --ssh-key, both ways an exec starts its proxy (cli/exec_egress.cc, cli/egress_process_launch.cc):
// the agent socket is bound into the sandbox read-only (a socket connects all the same) at
// net::kSandboxAgentSocket, which SSH_AUTH_SOCK names. Header-only: the launcher links only
// what it reaches, and no proxy code.
#pragma once

#include <string>

#include "cli/exec_options.h"
#include "net/ssh_agent_socket.h"

namespace corral::cli {

inline void exposeAgentSocket(ExecInvocation& inv, const std::string& host_path) {
  inv.spec.ro_binds.push_back({host_path, net::kSandboxAgentSocket});
  inv.spec.env.push_back(std::string("SSH_AUTH_SOCK=") + net::kSandboxAgentSocket);
}

}  // namespace corral::cli
