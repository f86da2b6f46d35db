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

// Whether clientSocket() is found without the password database: CORRAL_SOCKET, root,
// XDG_RUNTIME_DIR, XDG_STATE_HOME or HOME is set.
bool socketKnownWithoutPasswd();
// The caller's home directory from the password database (getpwuid), for a user without
// $HOME. In a file of its own (paths_passwd.cc) because the static `corral` launcher must not
// carry glibc's NSS: it links a definition of its own (src/launcher_paths.cc) and serves a
// client only when socketKnownWithoutPasswd().
std::string passwdHome();

}  // namespace corral::daemon
