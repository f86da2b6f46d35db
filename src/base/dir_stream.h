// SPDX-License-Identifier: Apache-2.0
// readdir over a directory fd without disturbing it.
#pragma once

#include <dirent.h>

#include <memory>

namespace corral {

using DirStream = std::unique_ptr<DIR, int (*)(DIR*)>;

// A DIR stream over a duplicate of dir, rewound to the start: walking it leaves dir itself
// (its offset, its lifetime) alone. Null, with errno set, when dir cannot be duplicated or is
// not a directory.
DirStream openDirStream(int dir);

}  // namespace corral
