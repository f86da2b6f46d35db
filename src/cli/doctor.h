// SPDX-License-Identifier: Apache-2.0
// `corral doctor`: host facilities, the mechanism each limit will use, and whether a
// default `corral exec` would run here (exit 1 with the reason and the fix when not).
#pragma once

#include <string>
#include <vector>

namespace corral::cli {
int doctorMain(const std::vector<std::string>& args);
}
