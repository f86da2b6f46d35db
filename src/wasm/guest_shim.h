// SPDX-License-Identifier: Apache-2.0
// The C file compiled beside wasm2c's output: a fixed entry ABI for corral-wasm-guest, which
// cannot know the module's own instance type.
#pragma once

#include <string_view>

namespace corral::wasm {

// wasm2c runs with `-n corral`, writing module.c and module.h; the shim includes module.h.
// CORRAL_HAS_WASI and CORRAL_HAS_HTTP say which import modules the module uses (wasm2c's
// instantiate takes one instance for each, in the order of their names).
extern const std::string_view kGuestShimSource;
inline constexpr int kGuestShimAbi = 2;  // guest_main.cc's kShimAbi

}  // namespace corral::wasm
