// SPDX-License-Identifier: Apache-2.0
// readUpTo.
#include "base/read_fd.h"

#include <unistd.h>

#include <algorithm>

namespace corral {

Result<std::string> readUpTo(int fd, size_t limit, const std::string& what) {
  // The buffer grows with what is read, never to the limit up front: callers pass generous
  // caps (4 GiB to hash an output), and zero-filling the cap cost seconds and gigabytes.
  constexpr size_t kFirstChunk = size_t{64} * 1024;
  const size_t want = limit == SIZE_MAX ? limit : limit + 1;  // one past the limit: "too large"
  std::string out;
  size_t have = 0;
  while (have < want) {
    if (have == out.size()) out.resize(std::min(want, std::max(kFirstChunk, out.size() * 2)));
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
