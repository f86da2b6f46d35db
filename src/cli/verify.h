// SPDX-License-Identifier: Apache-2.0
// `corral verify WORKSPACE [--public-key PEM] [--trusted-head HEX] [--json]`: checks an audit
// record. Exit 0 verified, 1 verification failed, 125 bad usage.
#pragma once

#include <string>
#include <vector>

namespace corral::cli {
int verifyMain(const std::vector<std::string>& args);
}
