// SPDX-License-Identifier: Apache-2.0
// Tests only: a WASI command module built byte by byte, so a test can give it exactly the
// hostile name, signature, size or custom section it needs (the unit tests and tests/wasm).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace corral::wasm::testing {

inline std::string leb(uint32_t v) {
  std::string out;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    if (v) b |= 0x80;
    out += static_cast<char>(b);
  } while (v);
  return out;
}
inline std::string str(std::string_view s) { return leb(static_cast<uint32_t>(s.size())) + std::string(s); }
inline std::string section(uint8_t id, const std::string& body) {
  return std::string(1, static_cast<char>(id)) + leb(static_cast<uint32_t>(body.size())) + body;
}

// One import (module.name of type import_type), a memory, the `_start` and `memory` exports
// and a _start body of body_nops nops; custom: a "name" custom section's payload, first.
struct RawModule {
  std::string import_module = "wasi_snapshot_preview1";
  std::string import_name = "proc_exit";
  std::string import_type = std::string("\x60\x01\x7f\x00", 4);  // (i32) -> ()
  std::string start_export = "_start";
  std::string custom;
  uint32_t body_nops = 0;
  std::string memory_limits = std::string("\x00\x01", 2);  // min 1 page, no maximum
};

inline std::string rawModule(const RawModule& m) {
  std::string out("\0asm\1\0\0\0", 8);
  if (!m.custom.empty()) out += section(0, str("name") + m.custom);
  out += section(1, leb(2) + m.import_type + std::string("\x60\x00\x00", 3));
  out += section(2, leb(1) + str(m.import_module) + str(m.import_name) + std::string("\x00\x00", 2));
  out += section(3, leb(1) + leb(1));
  out += section(5, leb(1) + m.memory_limits);
  out += section(7, leb(2) + str(m.start_export) + std::string("\x00", 1) + leb(1) + str("memory") + std::string("\x02\x00", 2));
  const std::string body = leb(0) + std::string(m.body_nops, '\x01') + std::string("\x0b", 1);
  out += section(10, leb(1) + leb(static_cast<uint32_t>(body.size())) + body);
  return out;
}

}  // namespace corral::wasm::testing
