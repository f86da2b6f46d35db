// SPDX-License-Identifier: Apache-2.0
// `corral exec`: flags -> SandboxSpec -> backend -> report and exit status.
#pragma once

#include <string>
#include <vector>

namespace corral::cli {
int execMain(const std::vector<std::string>& args);
}
