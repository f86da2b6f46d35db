// SPDX-License-Identifier: Apache-2.0
// The static `corral` launcher's passwdHome() (daemon/paths.h): defined here, it keeps
// daemon/paths_passwd.cc, and with it glibc's NSS, out of the static link. Never called:
// the launcher serves `session exec` only when socketKnownWithoutPasswd(), and hands every
// other case to corral-core.
#include <cstdlib>

#include "daemon/paths.h"

namespace corral::daemon {

std::string passwdHome() { std::abort(); }

}  // namespace corral::daemon
