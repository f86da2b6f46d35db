// SPDX-License-Identifier: Apache-2.0
// `corral keygen --out DIR`: a fresh Ed25519 audit signing key pair. Exit 0 written, 125 refused.
#pragma once

#include <string>
#include <vector>

namespace corral::cli {
int keygenMain(const std::vector<std::string>& args);
}
