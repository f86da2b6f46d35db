// SPDX-License-Identifier: Apache-2.0
#include "base/dir_stream.h"

#include <fcntl.h>

#include "base/unique_fd.h"

namespace corral {

DirStream openDirStream(int dir) {
  // An O_PATH fd (a detached mount from fsmount() is one) opens and stats fine but cannot be
  // read: getdents fails with EBADF, which readdir reports as the end, so the directory would
  // look empty. Such an fd is opened again for reading; any other is duplicated, which needs
  // no permission on the directory.
  const int flags = ::fcntl(dir, F_GETFL);
  UniqueFd dup(flags >= 0 && (flags & O_PATH) != 0 ? ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                                                   : ::fcntl(dir, F_DUPFD_CLOEXEC, 3));
  DIR* d = dup.valid() ? ::fdopendir(dup.get()) : nullptr;
  if (d == nullptr) return DirStream(nullptr, ::closedir);
  (void)dup.release();  // the stream owns it now
  ::rewinddir(d);
  return DirStream(d, ::closedir);
}

}  // namespace corral
