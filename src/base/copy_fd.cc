// SPDX-License-Identifier: Apache-2.0
// copy_file_range with a read/write fallback.
#include "base/copy_fd.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace corral {
namespace {

bool kernelCannotCopy(int err) { return err == EXDEV || err == EINVAL || err == ENOSYS || err == EOPNOTSUPP; }

Result<void> readWriteCopy(int in, int out, off_t left, const std::string& what) {
  std::vector<char> buf(1 << 20);
  while (left > 0) {
    const ssize_t n = ::read(in, buf.data(), static_cast<size_t>(std::min<off_t>(left, static_cast<off_t>(buf.size()))));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sysError("read " + what);
    if (n == 0) return Error(Errc::kIo, "copy " + what + ": the file ended early");
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out, buf.data() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return sysError("write the copy of " + what);
      done += w;
    }
    left -= n;
  }
  return {};
}

}  // namespace

Result<void> copyFdContents(int in, int out, off_t size, const std::string& what) {
  off_t left = size;
  while (left > 0) {
    const ssize_t n = ::copy_file_range(in, nullptr, out, nullptr, static_cast<size_t>(left), 0);
    if (n < 0 && errno == EINTR) continue;
    // Nothing was copied by the failed call, and both offsets moved by what was: the fallback
    // goes on from there.
    if (n < 0 && kernelCannotCopy(errno)) return readWriteCopy(in, out, left, what);
    if (n < 0) return sysError("copy " + what);
    if (n == 0) return Error(Errc::kIo, "copy " + what + ": the file ended early");
    left -= n;
  }
  return {};
}

}  // namespace corral
