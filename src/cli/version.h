// SPDX-License-Identifier: Apache-2.0
// `corral version [--json]`: what this binary is, what it was built from and with.
#pragma once

#include <string>
#include <vector>

namespace corral::cli {
int versionMain(const std::vector<std::string>& args);
}
