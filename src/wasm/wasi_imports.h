// SPDX-License-Identifier: Apache-2.0
// The import whitelist: every function a guest may import, with the one signature the host
// implements it with (a module declaring another would make the host read garbage registers).
#pragma once

#include <string_view>

namespace corral::wasm {

inline constexpr std::string_view kWasiModule = "wasi_snapshot_preview1";
inline constexpr std::string_view kHttpModule = "corral_http";

// Signature in a compact form: parameter letters, ':' and result letters; i = i32, I = i64.
// nullptr when (module, name) is not an import corral provides.
const char* importSignature(std::string_view module, std::string_view name);

}  // namespace corral::wasm
