// SPDX-License-Identifier: Apache-2.0
// `corral daemon` and `corral session ...`: options in, the daemon (or its API) does the rest.
#pragma once

#include <string>
#include <vector>

namespace corral::cli {

int daemonMain(const std::vector<std::string>& args);
int sessionMain(const std::vector<std::string>& args);

}  // namespace corral::cli
