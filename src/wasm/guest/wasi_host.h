// SPDX-License-Identifier: Apache-2.0
// The WASI preview 1 host of the one guest in this process: its arguments, environment, fd
// table and a window on its linear memory. Nothing is granted unless the runner put it here.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <wasm-rt.h>

namespace corral::wasm::guest {

// WASI errno values used by the host (wasi/api.h names them __WASI_ERRNO_*).
enum : uint16_t {
  kOk = 0, k2Big = 1, kAcces = 2, kBadf = 8, kExist = 20, kFault = 21, kInval = 28, kIo = 29, kIsdir = 31,
  kLoop = 32, kMfile = 33, kNametoolong = 37, kNoent = 44, kNomem = 48, kNosys = 52, kNotdir = 54,
  kNotempty = 55, kNotsup = 58, kPerm = 63, kRofs = 69, kSpipe = 70, kNotcapable = 76,
};

struct GuestFd {
  int host = -1;             // -1: free slot
  bool preopen = false;
  bool dir = false;
  std::string preopen_name;  // what the guest sees as the preopen's path
  // A read-write preopen, a directory opened beneath one, or a file opened for writing there.
  bool writable = false;
};

struct WasiContext {
  wasm_rt_memory_t* memory = nullptr;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::vector<GuestFd> fds;  // 0-2 stdio, then the preopens, then files the guest opened
};

WasiContext& wasi();

// A pointer into linear memory for [ptr, ptr + len), or nullptr when any of it lies outside.
inline uint8_t* guestBytes(uint32_t ptr, uint64_t len) {
  const wasm_rt_memory_t* m = wasi().memory;
  if (!m || static_cast<uint64_t>(ptr) + len > m->size) return nullptr;
  return m->data + ptr;
}

template <typename T>
bool storeGuest(uint32_t ptr, T value) {
  uint8_t* p = guestBytes(ptr, sizeof(T));
  if (!p) return false;
  std::memcpy(p, &value, sizeof(T));
  return true;
}

template <typename T>
bool loadGuest(uint32_t ptr, T* value) {
  const uint8_t* p = guestBytes(ptr, sizeof(T));
  if (!p) return false;
  std::memcpy(value, p, sizeof(T));
  return true;
}

uint16_t wasiErrno(int host_errno);
// The guest's path [ptr, ptr + len) as a string: false when outside memory, longer than 4096
// bytes or holding a NUL (the host would see a shorter path).
bool guestPath(uint32_t ptr, uint32_t len, std::string* out);
// The guest's fd as a host fd, or -1 when it names no open entry.
GuestFd* guestFd(uint32_t fd);

}  // namespace corral::wasm::guest

// The import instance wasm2c passes to every WASI function. One guest per process: it is
// only a tag, the state is wasi().
struct Z_wasi_snapshot_preview1_instance_t {
  int unused;
};
