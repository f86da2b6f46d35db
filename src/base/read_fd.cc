// SPDX-License-Identifier: Apache-2.0
// readUpTo.
#include "base/read_fd.h"

#include <unistd.h>

namespace corral {

Result<std::string> readUpTo(int fd, size_t limit, const std::string& what) {
  std::string out(limit + 1, '\0');
  size_t have = 0;
  while (have < out.size()) {
    ssize_t r = ::read(fd, out.data() + have, out.size() - have);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return sysError(what);
    if (r == 0) break;
    have += static_cast<size_t>(r);
  }
  out.resize(have);
  return out;
}

}  // namespace corral
