// SPDX-License-Identifier: Apache-2.0
// corral-wasm-guest: the process that runs one compiled guest inside a namespace sandbox.
// `corral wasm run` builds its argv; nothing here is a user interface.
//
//   corral-wasm-guest MODULE.so LIMIT_PAGES [--dir SANDBOX_PATH GUEST_PATH]... [--dir-rw SANDBOX_PATH GUEST_PATH]...
//                     [--env K=V]... [--proxy PORT [--lease NAME ORIGIN]... [--ca FILE]] -- ARGV0 ARGS...
//
// The guest's environment comes from --env, never from this process's own (which the guest
// must not see and which, through LD_*, would steer the loader of this very process).
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "wasm/guest/http_host.h"
#include "wasm/guest/runtime.h"
#include "wasm/guest/wasi_host.h"

namespace {

using corral::wasm::guest::hostFailure;
using corral::wasm::guest::wasi;

// The functions the compiled module's shim exports (src/wasm/guest_shim.cc writes it).
using InstantiateFn = void (*)(Z_wasi_snapshot_preview1_instance_t*, Z_corral_http_instance_t*);
using MemoryFn = wasm_rt_memory_t* (*)();
using StartFn = void (*)();
constexpr int kShimAbi = 2;

void* symbol(void* so, const char* name) {
  void* p = ::dlsym(so, name);
  if (!p) hostFailure("the module lacks ", name);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  int stack_marker = 0;
  if (argc < 4) hostFailure("usage: corral-wasm-guest MODULE.so LIMIT_PAGES ... -- ARGV0 ...");
  char* end = nullptr;
  const unsigned long limit = std::strtoul(argv[2], &end, 10);
  if (*end != '\0' || limit > 65536) hostFailure("bad page limit");
  auto& ctx = wasi();
  for (int fd = 0; fd <= 2; ++fd) ctx.fds.push_back({fd, false, false, {}});
  int i = 3;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    const bool rw = std::strcmp(argv[i], "--dir-rw") == 0;
    if ((rw || std::strcmp(argv[i], "--dir") == 0) && i + 2 < argc) {
      // O_PATH: the preopen is only ever a base for openat2, never read itself.
      const int fd = ::open(argv[i + 1], O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) hostFailure("cannot open a preopen directory: ", argv[i + 1]);
      ctx.fds.push_back({fd, true, true, argv[i + 2], rw});
      i += 2;
    } else if (std::strcmp(argv[i], "--env") == 0 && i + 1 < argc) {
      ctx.env.emplace_back(argv[++i]);
    } else if (std::strcmp(argv[i], "--proxy") == 0 && i + 1 < argc) {
      const unsigned long port = std::strtoul(argv[++i], &end, 10);
      if (*end != '\0' || port == 0 || port > 65535) hostFailure("bad proxy port");
      corral::wasm::guest::httpConfig().proxy_port = static_cast<uint16_t>(port);
    } else if (std::strcmp(argv[i], "--ca") == 0 && i + 1 < argc) {
      corral::wasm::guest::httpConfig().ca_file = argv[++i];
    } else if (std::strcmp(argv[i], "--lease") == 0 && i + 2 < argc) {
      corral::wasm::guest::httpConfig().leases.push_back({argv[i + 1], argv[i + 2]});
      i += 2;
    } else {
      hostFailure("unknown argument: ", argv[i]);
    }
  }
  if (i >= argc) hostFailure("no -- before the guest's arguments");
  for (++i; i < argc; ++i) ctx.args.emplace_back(argv[i]);

  if (!corral::wasm::guest::initRuntime(static_cast<uint32_t>(limit), reinterpret_cast<uintptr_t>(&stack_marker)))
    hostFailure("cannot install the trap handler");
  // RTLD_NOW: an import the host does not define fails here, before any guest code runs.
  void* so = ::dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!so) hostFailure("cannot load the compiled module: ", ::dlerror());
  const auto* abi = static_cast<const int*>(symbol(so, "corral_guest_abi"));
  if (*abi != kShimAbi) hostFailure("the compiled module was built for another runtime ABI");
  auto instantiate = reinterpret_cast<InstantiateFn>(symbol(so, "corral_guest_instantiate"));
  auto memory = reinterpret_cast<MemoryFn>(symbol(so, "corral_guest_memory"));
  auto start = reinterpret_cast<StartFn>(symbol(so, "corral_guest_start"));
  // The memory's address is fixed before instantiation, so a start function that already
  // calls WASI sees its memory.
  ctx.memory = memory();
  static Z_wasi_snapshot_preview1_instance_t wasi_instance{};
  static Z_corral_http_instance_t http_instance{};
  instantiate(&wasi_instance, &http_instance);
  start();
  return 0;
}
