// SPDX-License-Identifier: Apache-2.0
// Runs a host tool (mkfs.erofs, mkfs.ext4, dpkg-query) to completion, capturing its output.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace corral::vm {

// argv[0] is an absolute path; the environment is a fixed minimal one. Returns stdout; an
// exit status other than 0 is an error carrying the first line of stderr.
Result<std::string> runTool(const std::vector<std::string>& argv, size_t max_output = 64u << 20);

// The first of candidates that exists and is executable, or an error naming the package.
Result<std::string> findTool(const std::vector<std::string>& candidates, const std::string& package);

}  // namespace corral::vm
