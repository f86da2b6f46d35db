// SPDX-License-Identifier: Apache-2.0
// One hexadecimal digit's value: shared by the chunked-body parser and the daemon's request
// target decoding.
#pragma once

namespace corral {

// 0..15 for 0-9, a-f, A-F; -1 for any other byte.
constexpr int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace corral
