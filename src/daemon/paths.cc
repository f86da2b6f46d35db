// SPDX-License-Identifier: Apache-2.0
// Default locations, the same for the daemon and its clients.
#include "daemon/paths.h"

#include <unistd.h>

#include <cstdlib>

namespace corral::daemon {
namespace {

std::string envDir(const char* name) {
  const char* v = std::getenv(name);
  // Relative values are ignored, as the XDG base directory spec says.
  return v && v[0] == '/' ? std::string(v) : std::string();
}

std::string home() {
  if (std::string h = envDir("HOME"); !h.empty()) return h;
  return passwdHome();
}

}  // namespace

std::string defaultStateDir() {
  if (::geteuid() == 0) return "/var/lib/corral";
  if (std::string x = envDir("XDG_STATE_HOME"); !x.empty()) return x + "/corral";
  return home() + "/.local/state/corral";
}

std::string defaultSocket() {
  if (::geteuid() == 0) return "/run/corral/api.sock";
  if (std::string x = envDir("XDG_RUNTIME_DIR"); !x.empty()) return x + "/corral/api.sock";
  return defaultStateDir() + "/api.sock";
}

bool socketKnownWithoutPasswd() {
  if (const char* s = std::getenv("CORRAL_SOCKET"); s && *s) return true;
  return ::geteuid() == 0 || !envDir("XDG_RUNTIME_DIR").empty() || !envDir("XDG_STATE_HOME").empty() ||
         !envDir("HOME").empty();
}

SocketChoice clientSocket() {
  if (const char* s = std::getenv("CORRAL_SOCKET"); s && *s) return {s, "CORRAL_SOCKET"};
  return {defaultSocket(), "the default"};
}

}  // namespace corral::daemon
