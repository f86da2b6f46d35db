// SPDX-License-Identifier: Apache-2.0
#pragma once
#include <string>
#include <vector>

namespace corral::cli {

// `corral run MANIFEST [--workspace DIR] [--apply] [--json] [--signing-key FILE]
//             [--trace-content hashes|full] [--session ID] [--backend namespace|vm [--allow-weaker kvm]]`.
int runMain(const std::vector<std::string>& args);

}  // namespace corral::cli
