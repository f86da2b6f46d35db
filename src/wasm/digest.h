// SPDX-License-Identifier: Apache-2.0
// SHA-256 for the module cache, through libsodium: the `corral` launcher, which links no
// OpenSSL, serves cached runs (cli/launcher.cc), and both binaries must compute one key.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace corral::wasm {

// Lowercase hex of SHA-256(bytes): the same digest as base/sha256.h's sha256Hex.
std::string sha256Hex(std::string_view bytes);
// Of what is left to read from fd, read in 64 KiB pieces; `what` names it in an error.
Result<std::string> sha256HexOfFd(int fd, const std::string& what);

}  // namespace corral::wasm
