// SPDX-License-Identifier: Apache-2.0
// A network and mount namespace of the test process's own: extra addresses on its loopback
// and its own /etc/hosts, so internal destinations are real without touching the host's network.
#pragma once

#include <string>
#include <vector>

namespace corral::testing {

// Moves this process into a new network and mount namespace (and, when not root, a new user
// namespace mapping its own uid and gid, so it stays the same user and corral takes its
// rootless path). Brings lo up, adds each IPv4 address of `addresses` to it as a /32, and
// bind-mounts a file holding `hosts` over /etc/hosts when `hosts` is not empty. Every child
// started later (corral, curl, python) inherits all of it.
// Invariant: call while the process has one thread (a suite's SetUpTestSuite, before any
// helper thread starts): unshare(CLONE_NEWUSER) refuses a multithreaded process.
// Returns "" on success, else why it could not (the caller skips with the reason).
std::string enterPrivateNetwork(const std::vector<std::string>& addresses, const std::string& hosts);

// After enterPrivateNetwork: bind-mounts a file holding `content` over `path` (an existing
// file) in the private mount namespace. Returns "" on success, else why not.
std::string bindOverFile(const std::string& path, const std::string& content);

}  // namespace corral::testing
