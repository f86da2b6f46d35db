// SPDX-License-Identifier: Apache-2.0
// Copying a regular file's bytes from one descriptor to another, across file systems too.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/result.h"

namespace corral {

// Copies `size` bytes from in's offset to out's: copy_file_range(2) where the kernel can
// (same file system), read and write where it answers EXDEV, EINVAL, ENOSYS or EOPNOTSUPP
// (since Linux 5.19 it refuses most copies between two file systems: a tmpfs /tmp and an ext4
// cache). A file that ends early is an error naming `what`.
Result<void> copyFdContents(int in, int out, off_t size, const std::string& what);

}  // namespace corral
