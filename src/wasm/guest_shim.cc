// SPDX-License-Identifier: Apache-2.0
// The shim's source, kept as a string so the compile child needs nothing of corral's tree.
#include "wasm/guest_shim.h"

namespace corral::wasm {

const std::string_view kGuestShimSource = R"(/* corral guest shim, ABI 2 */
struct Z_wasi_snapshot_preview1_instance_t;
struct Z_corral_http_instance_t;
#include "module.h"
__attribute__((visibility("default"))) const int corral_guest_abi = 2;
static Z_corral_instance_t corral_instance;
__attribute__((visibility("default"))) wasm_rt_memory_t* corral_guest_memory(void) {
  return Z_corralZ_memory(&corral_instance);
}
/* wasm2c passes one instance per imported module, in the order of the module names. */
__attribute__((visibility("default"))) void corral_guest_instantiate(struct Z_wasi_snapshot_preview1_instance_t* wasi,
                                                                     struct Z_corral_http_instance_t* http) {
  Z_corral_init_module();
#if CORRAL_HAS_HTTP && CORRAL_HAS_WASI
  Z_corral_instantiate(&corral_instance, http, wasi);
#elif CORRAL_HAS_HTTP
  (void)wasi;
  Z_corral_instantiate(&corral_instance, http);
#elif CORRAL_HAS_WASI
  (void)http;
  Z_corral_instantiate(&corral_instance, wasi);
#else
  (void)wasi;
  (void)http;
  Z_corral_instantiate(&corral_instance);
#endif
}
__attribute__((visibility("default"))) void corral_guest_start(void) { Z_corralZ__start(&corral_instance); }
)";

}  // namespace corral::wasm
