// SPDX-License-Identifier: Apache-2.0
// Whether another user could rename a directory, or any directory above it, out from under
// a program that later uses its path (git does: it turns its cwd into an absolute path).
#pragma once

#include <string>

namespace corral {

// Walks from the directory open as dir up to "/" through "..": every directory on the way
// must belong to root or to this user (or, inside a user namespace, to a user it does not
// map), and one that group or others can write must be sticky. Returns "" when so, else why not (naming the directory's owner and mode).
std::string whoElseCouldRename(int dir);

// The path of the directory open as dir, as the kernel resolved it (no symlinks in it), or
// "" when it cannot be told.
std::string realPathOf(int dir);

}  // namespace corral
