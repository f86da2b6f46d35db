// SPDX-License-Identifier: Apache-2.0
// readdir over a directory fd without disturbing it.
#pragma once

#include <dirent.h>

#include <memory>

namespace corral {

using DirStream = std::unique_ptr<DIR, int (*)(DIR*)>;

// A DIR stream over a duplicate of dir (dir opened again when it is an O_PATH fd, which
// cannot be read), rewound to the start: walking it leaves dir itself (its offset, its
// lifetime) alone. Null, with errno set, when dir cannot be duplicated or is not a directory.
// readdir returning null with errno set is an error, not the end.
DirStream openDirStream(int dir);

}  // namespace corral
