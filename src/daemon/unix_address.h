// SPDX-License-Identifier: Apache-2.0
// A filesystem path as a sockaddr_un, refused when it does not fit sun_path.
#pragma once

#include <sys/un.h>

#include <cstring>
#include <string>

#include "base/result.h"

namespace corral::daemon {

inline Result<sockaddr_un> unixAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    return Error(Errc::kInvalidArgument, "socket path " + path + ": empty or over " + std::to_string(sizeof addr.sun_path - 1) + " bytes");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

}  // namespace corral::daemon
