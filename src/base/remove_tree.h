// SPDX-License-Identifier: Apache-2.0
// Removing a directory tree through file descriptors: nothing is followed through a symlink
// and nothing outside the tree is reached, even if names change while it is removed.
#pragma once

namespace corral {

// Removes everything inside the directory open as dir, depth first. Each subdirectory is
// opened relative to its parent's fd with O_NOFOLLOW, so a symlink is removed, never entered.
// Best effort: returns false when anything could not be removed.
bool removeContents(int dir);

// Removes parent/name when it is still the directory open as held (same device and inode):
// its contents through held, then the name with AT_REMOVEDIR, which removes only an empty
// directory, so a name swapped in at the last moment loses nothing. False when name is
// no longer that directory or something could not be removed.
bool removeTreeAt(int parent, const char* name, int held);

}  // namespace corral
