// SPDX-License-Identifier: Apache-2.0
// The password-database half of paths.cc, apart so the static launcher can leave it out
// (paths.h says why).
#include <pwd.h>
#include <unistd.h>

#include "daemon/paths.h"

namespace corral::daemon {

std::string passwdHome() {
  const passwd* pw = ::getpwuid(::getuid());
  return pw && pw->pw_dir ? pw->pw_dir : "/";
}

}  // namespace corral::daemon
