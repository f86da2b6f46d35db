// SPDX-License-Identifier: Apache-2.0
// Keeping what a root task's command left in /workspace: the sandbox's tmpfs mirrored into the
// run's private workspace, so the next command (and read) starts from it.
#pragma once
#include <cstdint>
#include <string>

namespace corral::agent {

struct MirrorStats {
  uint64_t files = 0;    // regular files copied
  uint64_t links = 0;    // symlinks recreated (as links: never followed, here or later)
  uint64_t removed = 0;  // entries the command deleted, removed here too
  uint64_t skipped = 0;  // FIFOs, sockets, devices, unreadable files, trees deeper than kMaxMirrorDepth
  std::string first_skip;  // why the first skipped entry was skipped ("a/b: fifo")
};

inline constexpr int kMaxMirrorDepth = 128;

// Makes the tree at to (the private workspace) equal the tree at from (the sandbox's
// /workspace after its command ended, every process of it gone): directories, regular files
// (setuid/setgid/sticky bits dropped) and symlinks; everything opened relative to its
// parent's fd with O_NOFOLLOW, nothing outside either tree is reached. A top-level .corral
// is never touched. Best effort per entry: what cannot be kept is counted in skipped.
MirrorStats mirrorWorkspace(int from, int to);

}  // namespace corral::agent
