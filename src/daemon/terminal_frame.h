// SPDX-License-Identifier: Apache-2.0
// The frames of an upgraded terminal connection (api.md, Terminals): a type byte, a 4-byte
// big-endian length, the payload. Shared by the daemon's relay and the CLI's client.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "base/result.h"

namespace corral::daemon::terminal {

inline constexpr char kProtocol[] = "corral-terminal.v1";  // the Upgrade token
inline constexpr size_t kHeaderBytes = 5;
inline constexpr uint32_t kMaxPayload = 64 * 1024;  // a longer frame is refused (connection closed)
inline constexpr uint32_t kMaxSide = 4096;          // rows and columns: 1..kMaxSide

enum class Frame : uint8_t {
  kData = 1,    // either way: bytes typed, or bytes the terminal wrote
  kResize = 2,  // client -> daemon: rows, cols (2 bytes each, big-endian)
  kExit = 3,    // daemon -> client: the command's report (JSON), then the connection closes
  kError = 4,   // daemon -> client: {"error": {"code", "message"}}, then the connection closes
  // daemon -> client, first on a re-attach only: {"scrollback_bytes", "dropped_bytes"}; the
  // scrollback follows as one data frame (when not empty), then live output.
  kScrollback = 5,
};

inline std::string encode(Frame type, std::string_view payload) {
  std::string out;
  out.reserve(kHeaderBytes + payload.size());
  out.push_back(static_cast<char>(type));
  const auto n = static_cast<uint32_t>(payload.size());
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((n >> shift) & 0xff));
  out.append(payload);
  return out;
}

inline std::string resizePayload(uint32_t rows, uint32_t cols) {
  return {static_cast<char>(rows >> 8 & 0xff), static_cast<char>(rows & 0xff), static_cast<char>(cols >> 8 & 0xff),
          static_cast<char>(cols & 0xff)};
}

// The first whole frame of buf, taken out of it: true when there was one, false when more
// bytes are needed; an error for an unknown type or a payload over max.
inline Result<bool> takeFrame(std::string& buf, Frame* type, std::string* payload, uint32_t max = kMaxPayload) {
  if (buf.size() < kHeaderBytes) return false;
  const auto t = static_cast<uint8_t>(buf[0]);
  if (t < static_cast<uint8_t>(Frame::kData) || t > static_cast<uint8_t>(Frame::kScrollback))
    return Error(Errc::kInvalidArgument, "terminal: unknown frame type " + std::to_string(t));
  uint32_t n = 0;
  for (size_t i = 1; i < kHeaderBytes; ++i) n = n << 8 | static_cast<uint8_t>(buf[i]);
  if (n > max) return Error(Errc::kInvalidArgument, "terminal: a frame of " + std::to_string(n) + " bytes (at most " + std::to_string(max) + ")");
  if (buf.size() < kHeaderBytes + n) return false;
  *type = static_cast<Frame>(t);
  payload->assign(buf, kHeaderBytes, n);
  buf.erase(0, kHeaderBytes + n);
  return true;
}

// A resize payload's rows and cols, each 1..kMaxSide, or why not.
inline Result<std::pair<uint16_t, uint16_t>> parseResize(std::string_view p) {
  if (p.size() != 4) return Error(Errc::kInvalidArgument, "terminal: a resize frame holds 4 bytes");
  const uint32_t rows = static_cast<uint8_t>(p[0]) << 8 | static_cast<uint8_t>(p[1]);
  const uint32_t cols = static_cast<uint8_t>(p[2]) << 8 | static_cast<uint8_t>(p[3]);
  if (rows == 0 || cols == 0 || rows > kMaxSide || cols > kMaxSide)
    return Error(Errc::kInvalidArgument, "terminal: a size of " + std::to_string(rows) + "x" + std::to_string(cols) +
                                             " (rows and columns are 1.." + std::to_string(kMaxSide) + ")");
  return std::pair{static_cast<uint16_t>(rows), static_cast<uint16_t>(cols)};
}

}  // namespace corral::daemon::terminal
