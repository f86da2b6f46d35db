// SPDX-License-Identifier: Apache-2.0
#include "sandbox/file_copy.h"

#include <sys/sendfile.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace corral::sandbox {

// A file with at least as many allocated blocks as bytes has no hole worth keeping: it is
// copied front to back without asking for its data regions (three system calls per file
// fewer, which is most of a small file's cost). The destination is always new and empty, so
// a source that shrank meanwhile simply ends where its data did.
Result<void> copyFileData(int from, int to, const struct stat& st, const std::string& what) {
  auto failed = [&what]() -> Error {
    if (errno == ENOSPC) return Error(Errc::kLimit, what + ": workspace is full (raise --workspace-size)");
    if (errno == EFBIG) return Error(Errc::kLimit, what + ": file too large (corral's own file-size limit, ulimit -f?)");
    return sysError(what);
  };
  const auto end = st.st_size;
  if (end <= 0) return {};
  if (st.st_blocks * 512 >= end) {
    for (off_t off = 0; off < end;) {
      ssize_t n = ::sendfile(to, from, &off, static_cast<size_t>(std::min<off_t>(end - off, off_t{1} << 30)));
      if (n < 0) return failed();
      if (n == 0) break;
    }
    return {};
  }
  // Sparse: the data regions one by one (without SEEK_DATA support the whole range counts as
  // data), then the length.
  off_t length = end;  // shorter if the file shrank while we copied
  for (off_t pos = 0; pos < length;) {
    off_t data = ::lseek(from, pos, SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;  // only a hole is left
    if (data < 0) data = pos;               // no hole support here: copy it all
    if (data >= length) break;
    off_t hole = ::lseek(from, data, SEEK_HOLE);
    if (hole < 0 || hole > length) hole = length;
    if (::lseek(to, data, SEEK_SET) < 0) return sysError(what);
    for (off_t off = data; off < hole;) {
      const auto chunk = static_cast<size_t>(std::min<off_t>(hole - off, off_t{1} << 30));
      ssize_t n = ::sendfile(to, from, &off, chunk);
      if (n < 0) return failed();
      if (n == 0) {  // the file shrank while we copied: keep what we have
        length = off;
        break;
      }
    }
    pos = hole;
  }
  if (::ftruncate(to, length) != 0) return failed();
  return {};
}

}  // namespace corral::sandbox
