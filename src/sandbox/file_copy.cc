// SPDX-License-Identifier: Apache-2.0
#include "sandbox/file_copy.h"

#include <sys/sendfile.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace corral::sandbox {

namespace {

Error copyError(const std::string& what, CopyInto into) {
  if (errno == ENOSPC)
    return Error(Errc::kLimit, what + (into == CopyInto::kHost ? ": the host's file system is full"
                                                               : ": workspace is full (raise --workspace-size)"));
  if (errno == EFBIG) return Error(Errc::kLimit, what + ": file too large (corral's own file-size limit, ulimit -f?)");
  return sysError(what);
}

// Copies from's bytes [begin, end) to the same offsets of to, whose file position is begin.
// Returns where it stopped: end, or earlier where from ended (it shrank while we copied).
Result<off_t> sendRange(int from, int to, off_t begin, off_t end, const std::string& what, CopyInto into) {
  for (off_t off = begin; off < end;) {
    ssize_t n = ::sendfile(to, from, &off, static_cast<size_t>(std::min<off_t>(end - off, off_t{1} << 30)));
    if (n < 0) return copyError(what, into);
    if (n == 0) return off;
  }
  return end;
}

}  // namespace

// A file with at least as many allocated blocks as bytes has no hole worth keeping: it is
// copied front to back without asking for its data regions (three system calls per file
// fewer, which is most of a small file's cost). The destination is always new and empty, so
// a source that shrank meanwhile simply ends where its data did.
Result<void> copyFileData(int from, int to, const struct stat& st, const std::string& what, CopyInto into) {
  const off_t end = st.st_size;
  if (end <= 0) return {};
  if (st.st_blocks * 512 >= end) {
    auto sent = sendRange(from, to, 0, end, what, into);
    if (!sent) return sent.error();
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
    ASSIGN_OR_RETURN(off_t stopped, sendRange(from, to, data, hole, what, into));
    if (stopped < hole) {  // the file shrank while we copied: keep what we have
      length = stopped;
      break;
    }
    pos = hole;
  }
  if (::ftruncate(to, length) != 0) return copyError(what, into);
  return {};
}

}  // namespace corral::sandbox
