// SPDX-License-Identifier: Apache-2.0
// `corral daemon`, `corral session|credential|profile ...`: options in, the daemon (or its API) does the rest.
#pragma once

#include <string>
#include <vector>

namespace corral::cli {

int daemonMain(const std::vector<std::string>& args);
int sessionMain(const std::vector<std::string>& args);
int credentialMain(const std::vector<std::string>& args);
int profileMain(const std::vector<std::string>& args);

}  // namespace corral::cli
