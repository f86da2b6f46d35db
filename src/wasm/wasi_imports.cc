// SPDX-License-Identifier: Apache-2.0
// The import whitelist: WASI preview 1 as wasi-libc declares it for wasm32, and corral_http v1.
#include "wasm/wasi_imports.h"

namespace corral::wasm {
namespace {

struct Entry {
  std::string_view name;
  const char* signature;
};

// Every preview 1 function. The host (src/wasm/guest/wasi_host.cc) defines each one, most of
// them as a refusal, so that a module built against the full wasi-libc links; a name outside
// this list is refused before compilation.
constexpr Entry kWasi[] = {
    {"args_get", "ii:i"},
    {"args_sizes_get", "ii:i"},
    {"environ_get", "ii:i"},
    {"environ_sizes_get", "ii:i"},
    {"clock_res_get", "ii:i"},
    {"clock_time_get", "iIi:i"},
    {"fd_advise", "iIIi:i"},
    {"fd_allocate", "iII:i"},
    {"fd_close", "i:i"},
    {"fd_datasync", "i:i"},
    {"fd_fdstat_get", "ii:i"},
    {"fd_fdstat_set_flags", "ii:i"},
    {"fd_fdstat_set_rights", "iII:i"},
    {"fd_filestat_get", "ii:i"},
    {"fd_filestat_set_size", "iI:i"},
    {"fd_filestat_set_times", "iIIi:i"},
    {"fd_pread", "iiiIi:i"},
    {"fd_prestat_get", "ii:i"},
    {"fd_prestat_dir_name", "iii:i"},
    {"fd_pwrite", "iiiIi:i"},
    {"fd_read", "iiii:i"},
    {"fd_readdir", "iiiIi:i"},
    {"fd_renumber", "ii:i"},
    {"fd_seek", "iIii:i"},
    {"fd_sync", "i:i"},
    {"fd_tell", "ii:i"},
    {"fd_write", "iiii:i"},
    {"path_create_directory", "iii:i"},
    {"path_filestat_get", "iiiii:i"},
    {"path_filestat_set_times", "iiiiIIi:i"},
    {"path_link", "iiiiiii:i"},
    {"path_open", "iiiiiIIii:i"},
    {"path_readlink", "iiiiii:i"},
    {"path_remove_directory", "iii:i"},
    {"path_rename", "iiiiii:i"},
    {"path_symlink", "iiiii:i"},
    {"path_unlink_file", "iii:i"},
    {"poll_oneoff", "iiii:i"},
    {"proc_exit", "i:"},
    {"proc_raise", "i:i"},
    {"sched_yield", ":i"},
    {"random_get", "ii:i"},
    {"sock_accept", "iii:i"},
    {"sock_recv", "iiiiii:i"},
    {"sock_send", "iiiii:i"},
    {"sock_shutdown", "ii:i"},
};

// corral_http v1 (docs/wasm-abi.md, "HTTP"); the host is src/wasm/guest/http_host.cc.
constexpr Entry kHttp[] = {
    {"request_open", "iiiiiiiiIi:i"},
    {"request_write", "iiii:i"},
    {"response_open", "iii:i"},
    {"response_headers", "iii:i"},
    {"response_read", "iiii:i"},
    {"close", "i:i"},
};

}  // namespace

const char* importSignature(std::string_view module, std::string_view name) {
  auto find = [name](const auto& table) -> const char* {
    for (const Entry& e : table)
      if (e.name == name) return e.signature;
    return nullptr;
  };
  if (module == kWasiModule) return find(kWasi);
  if (module == kHttpModule) return find(kHttp);
  return nullptr;
}

}  // namespace corral::wasm
