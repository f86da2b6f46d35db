// SPDX-License-Identifier: Apache-2.0
// `corral market serve|admin|post|buyer|tasks|result|ledger`: flags in, one line or JSON out.
#pragma once

#include <string>
#include <vector>

namespace corral::cli {
int marketMain(const std::vector<std::string>& args);
}
