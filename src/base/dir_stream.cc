// SPDX-License-Identifier: Apache-2.0
#include "base/dir_stream.h"

#include <fcntl.h>

#include "base/unique_fd.h"

namespace corral {

DirStream openDirStream(int dir) {
  UniqueFd dup(::fcntl(dir, F_DUPFD_CLOEXEC, 3));
  DIR* d = dup.valid() ? ::fdopendir(dup.get()) : nullptr;
  if (d == nullptr) return DirStream(nullptr, ::closedir);
  (void)dup.release();  // the stream owns it now
  ::rewinddir(d);
  return DirStream(d, ::closedir);
}

}  // namespace corral
