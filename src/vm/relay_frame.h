// SPDX-License-Identifier: Apache-2.0
// The --net proxy relay's wire protocol over the corral.net virtio-serial port: frames that
// multiplex the command's TCP connections, a strict incremental parser, and the per-stream
// state (ids, half-closes, windows) both ends check every frame against (docs/vm.md, "Relay
// protocol"). Pure: no fds, so the fuzzer drives it as a hostile guest would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace corral::vm::relay {

// A frame: a 4-byte big-endian length L (kMinLength..kMaxLength), a type byte, a 4-byte
// big-endian stream id, and L-5 payload bytes.
inline constexpr size_t kHeaderBytes = 4;
inline constexpr size_t kMinLength = 5;
inline constexpr size_t kMaxData = size_t{16} * 1024;
inline constexpr size_t kMaxLength = kMinLength + kMaxData;
// A sender may have at most this many bytes of one stream unacknowledged: what the receiver
// buffers for one stream whose socket is slow to take them.
inline constexpr uint32_t kWindow = 256 * 1024;
// Streams open at once (the guest's connections through the proxy); past it the guest closes
// new ones. With kWindow, the receiver buffers at most kMaxStreams * kWindow (16 MiB).
inline constexpr size_t kMaxStreams = 64;

enum class Type : uint8_t {
  kOpen = 'o',    // guest -> host, empty: a new connection; ids strictly increase from 1
  kData = 'd',    // either way, 1..kMaxData bytes within the receiver's window
  kWindow = 'w',  // either way, 4-byte count: the receiver consumed that many more bytes
  kClose = 'c',   // either way, empty: the sender's half is done (shutdown SHUT_WR)
  kReset = 'r',   // either way, empty: the stream is gone; frames still in flight are dropped
};

enum class Side { kHost, kGuest };  // which end parses: only the host accepts kOpen

struct Frame {
  Type type;
  uint32_t stream;
  std::string payload;
};

std::string encode(Type type, uint32_t stream, std::string_view payload = {});
std::string encodeWindow(uint32_t stream, uint32_t bytes);

// Bytes in, whole frames out. A length out of range, an unknown type, a type not valid for
// this side, or a payload of the wrong shape is an error, and the parser stays failed.
class Parser {
 public:
  explicit Parser(Side side) : side_(side) {}
  void feed(std::string_view bytes) { buf_.append(bytes); }
  Result<std::optional<Frame>> next();
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  Result<std::optional<Frame>> fail(const std::string& why);
  Side side_;
  std::string buf_;
  size_t pos_ = 0;
  bool failed_ = false;
};

// The streams as one end sees them. receive() checks a parsed frame against the state and
// applies it: an id never opened, a second open of an id, data past the window or after the
// peer's close, a second close, or a window acknowledging bytes never sent is an error, and
// the table stays failed. Frames for a stream already retired (after a reset) are dropped.
class Streams {
 public:
  struct State {
    bool peer_closed = false;   // received kClose
    bool local_closed = false;  // sent kClose
    uint32_t in_unacked = 0;    // received, not yet acknowledged with kWindow
    uint32_t out_unacked = 0;   // sent, not yet acknowledged by the peer
  };
  enum class Verdict { kApply, kDrop };

  explicit Streams(Side side) : side_(side) {}
  Result<Verdict> receive(const Frame& f);
  // The guest's side of an open: the next id, or none when kMaxStreams are open.
  std::optional<uint32_t> openNext();
  // What this end sends: data (within sendCredit), acknowledgements, its close, a reset.
  uint32_t sendCredit(uint32_t id) const;
  void sent(uint32_t id, uint32_t bytes);
  void acked(uint32_t id, uint32_t bytes);
  void closedLocal(uint32_t id);
  void retire(uint32_t id);
  // Both halves closed and every byte acknowledged both ways: nothing more can come.
  bool finished(uint32_t id) const;
  const State* find(uint32_t id) const;
  size_t open() const { return live_.size(); }
  uint32_t highest() const { return highest_; }

 private:
  Result<Verdict> fail(const std::string& why);
  Side side_;
  std::map<uint32_t, State> live_;
  uint32_t highest_ = 0;
  bool failed_ = false;
};

}  // namespace corral::vm::relay
