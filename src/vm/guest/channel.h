// SPDX-License-Identifier: Apache-2.0
// The guest agent's end of the control channel (corral.ctl): framed sends under one lock, and
// a parser for what the host sends.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"
#include "vm/frame.h"

namespace corral::vm::guest {

class Channel {
 public:
  explicit Channel(UniqueFd fd) : fd_(std::move(fd)) {}
  bool send(frame::Type t, std::string_view payload) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string bytes = frame::encode(t, payload);
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::write(fd_.get(), bytes.data() + off, bytes.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // Sends data in chunks no larger than a frame's cap.
  bool sendChunked(frame::Type t, std::string_view data) {
    for (size_t off = 0; off < data.size(); off += frame::kMaxPayload)
      if (!send(t, data.substr(off, frame::kMaxPayload))) return false;
    return true;
  }
  int fd() const { return fd_.get(); }
  // Session mode (one poll loop): a frame already buffered, and one read() into the parser.
  Result<std::optional<frame::Frame>> buffered() { return parser_.next(); }
  bool fill() {
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(fd_.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      parser_.feed(std::string_view(buf, static_cast<size_t>(n)));
      return true;
    }
  }
  // One reader at a time (first the agent, then the stdin relay): the parser keeps what one
  // read brought beyond the frame it returns.
  Result<frame::Frame> receive() {
    char buf[65536];
    for (;;) {
      ASSIGN_OR_RETURN(auto f, parser_.next());
      if (f) return std::move(*f);
      ssize_t n = ::read(fd_.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Error(Errc::kIo, "control channel closed");
      parser_.feed(std::string_view(buf, static_cast<size_t>(n)));
    }
  }

 private:
  UniqueFd fd_;
  std::mutex mu_;
  frame::Parser parser_{frame::Direction::kToGuest};
};

}  // namespace corral::vm::guest
