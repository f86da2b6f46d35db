// SPDX-License-Identifier: Apache-2.0
// Where the daemon keeps its state and its socket, and where clients look for it.
#pragma once

#include <string>

namespace corral::daemon {

// root: /var/lib/corral; otherwise $XDG_STATE_HOME/corral, else ~/.local/state/corral.
std::string defaultStateDir();
// root: /run/corral/api.sock; otherwise $XDG_RUNTIME_DIR/corral/api.sock, else
// <defaultStateDir()>/api.sock.
std::string defaultSocket();

struct SocketChoice {
  std::string path;
  std::string source;  // "CORRAL_SOCKET" or "the default"
};
// $CORRAL_SOCKET when set, else defaultSocket().
SocketChoice clientSocket();

}  // namespace corral::daemon
