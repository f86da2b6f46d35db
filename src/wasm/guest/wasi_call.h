// SPDX-License-Identifier: Apache-2.0
// How a WASI import is defined: the C symbol wasm2c's output calls for wasi_snapshot_preview1.
#pragma once

#include <cstdint>

#include "wasm/guest/wasi_host.h"

using WasiInstance = Z_wasi_snapshot_preview1_instance_t;
#define CORRAL_WASI(result, name) extern "C" result Z_wasi_snapshot_preview1Z_##name
