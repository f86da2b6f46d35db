// SPDX-License-Identifier: Apache-2.0
// The guest process's wasm2c runtime: set up once before the module is loaded.
#pragma once

#include <cstdint>

#include <wasm-rt.h>

namespace corral::wasm::guest {

// limit_pages: the most linear memory the guest may ever have (--memory). stack_top: an
// address near the top of the main thread's stack, to tell stack exhaustion from other faults.
bool initRuntime(uint32_t limit_pages, uintptr_t stack_top);

// One line on stderr and the host-failure exit status; never returns.
[[noreturn]] void hostFailure(const char* what, const char* detail = "");

}  // namespace corral::wasm::guest
