// SPDX-License-Identifier: Apache-2.0
// A connected socket as a Beast SyncReadStream/SyncWriteStream with a deadline per call:
// a client that stops sending (or reading) cannot hold its thread past the timeout.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include "base/unique_fd.h"

namespace corral::daemon {

class FdStream {
 public:
  FdStream(UniqueFd fd, int timeout_ms) : fd_(std::move(fd)), timeout_ms_(timeout_ms) {}
  int fd() const { return fd_.get(); }

  template <class Buffers>
  size_t read_some(const Buffers& buffers, boost::system::error_code& ec) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers); ++it) {
      boost::asio::mutable_buffer b(*it);
      if (b.size() == 0) continue;
      if (!wait(POLLIN, ec)) return 0;
      const ssize_t n = ::recv(fd_.get(), b.data(), b.size(), 0);
      if (n < 0) ec.assign(errno, boost::system::system_category());
      else if (n == 0) ec = boost::asio::error::eof;
      else ec = {};
      return n > 0 ? static_cast<size_t>(n) : 0;
    }
    ec = {};
    return 0;
  }
  // Beast's SyncReadStream/SyncWriteStream concepts require the overloads without an
  // error_code too; corral calls only the ones with.
  template <class Buffers>
  size_t read_some(const Buffers& buffers) {
    boost::system::error_code ec;
    return read_some(buffers, ec);
  }
  template <class Buffers>
  size_t write_some(const Buffers& buffers) {
    boost::system::error_code ec;
    return write_some(buffers, ec);
  }

  template <class Buffers>
  size_t write_some(const Buffers& buffers, boost::system::error_code& ec) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers); ++it) {
      boost::asio::const_buffer b(*it);
      if (b.size() == 0) continue;
      if (!wait(POLLOUT, ec)) return 0;
      const ssize_t n = ::send(fd_.get(), b.data(), b.size(), MSG_NOSIGNAL);
      if (n < 0) {
        ec.assign(errno, boost::system::system_category());
        return 0;
      }
      ec = {};
      return static_cast<size_t>(n);
    }
    ec = {};
    return 0;
  }

 private:
  bool wait(short events, boost::system::error_code& ec) {
    pollfd p{fd_.get(), events, 0};
    for (;;) {
      const int rc = ::poll(&p, 1, timeout_ms_);
      if (rc < 0 && errno == EINTR) continue;
      if (rc > 0) return true;
      ec = rc == 0 ? boost::asio::error::timed_out : boost::system::error_code(errno, boost::system::system_category());
      return false;
    }
  }
  UniqueFd fd_;
  int timeout_ms_;
};

}  // namespace corral::daemon
