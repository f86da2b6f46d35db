// SPDX-License-Identifier: Apache-2.0
// A connected socket as a Beast SyncReadStream/SyncWriteStream with a deadline per call:
// a client that stops sending (or reading) cannot hold its thread past the timeout.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
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

  // One sendmsg for the whole buffer sequence (up to kMaxIov pieces): Beast hands a response
  // over as a status line, each header field and the body as separate buffers, and a send()
  // per piece cost a poll and a syscall each and woke the client for every one. The poll is
  // only for a full socket buffer: the deadline applies to waiting, not to a send that can go.
  template <class Buffers>
  size_t write_some(const Buffers& buffers, boost::system::error_code& ec) {
    iovec iov[kMaxIov];
    size_t count = 0;
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers) && count < kMaxIov; ++it) {
      boost::asio::const_buffer b(*it);
      if (b.size() == 0) continue;
      iov[count++] = {const_cast<void*>(b.data()), b.size()};
    }
    ec = {};
    if (count == 0) return 0;
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = count;
    for (;;) {
      const ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        ec.assign(errno, boost::system::system_category());
        return 0;
      }
      if (!wait(POLLOUT, ec)) return 0;
    }
  }

 private:
  static constexpr size_t kMaxIov = 64;
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
