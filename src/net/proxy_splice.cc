// SPDX-License-Identifier: Apache-2.0
// Tunnel relay by splice(2): once a tunnel's ClientHello has passed the SNI rule the proxy
// only moves bytes, so they go socket -> pipe -> socket inside the kernel. This halves the
// copies of the buffered relay (proxy_relay.cc), which stays the fallback.
#include <fcntl.h>
#include <unistd.h>

#include "net/proxy_connection.h"

namespace corral::net {
namespace {

constexpr int kPipeSize = 1024 * 1024;
// Bytes one pump moves before it yields the io thread to other connections.
constexpr uint64_t kSliceBytes = uint64_t{4} * 1024 * 1024;

std::unique_ptr<SplicePipe> makePipe() {
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return nullptr;
  auto p = std::make_unique<SplicePipe>();
  p->read_end = UniqueFd(fds[0]);
  p->write_end = UniqueFd(fds[1]);
  // Best effort: beyond the per-user pipe budget the kernel keeps the default size.
  (void)::fcntl(fds[1], F_SETPIPE_SZ, kPipeSize);
  int size = ::fcntl(fds[1], F_GETPIPE_SZ);
  if (size <= 0) return nullptr;
  p->capacity = static_cast<size_t>(size);
  return p;
}

}  // namespace

bool Connection::startSpliceRelay() {
  up_pipe_ = makePipe();
  down_pipe_ = makePipe();
  boost::system::error_code e1, e2;
  client_.native_non_blocking(true, e1);
  upstream_.native_non_blocking(true, e2);
  if (!up_pipe_ || !down_pipe_ || e1 || e2) {
    up_pipe_.reset();
    down_pipe_.reset();
    return false;
  }
  splicePump(client_, upstream_, *up_pipe_, ev_.bytes_up);
  splicePump(upstream_, client_, *down_pipe_, ev_.bytes_down);
  return true;
}

// Reads into the pipe while it has room and writes out of it while it holds bytes, in the
// same pass: the source keeps sending while the destination drains, instead of the two
// taking turns. Each side waits for readiness only when it cannot move, and at most one
// wait per side is outstanding.
template <typename Src, typename Dst>
void Connection::splicePump(Src& src, Dst& dst, SplicePipe& pipe, uint64_t& counter) {
  auto self = shared_from_this();
  uint64_t moved = 0;
  while (!finished_) {
    if (moved >= kSliceBytes) {  // fairness: let other connections run, then continue
      asio::post(server_.io, [self, &src, &dst, &pipe, &counter] {
        if (!self->finished_) self->splicePump(src, dst, pipe, counter);
      });
      return;
    }
    bool progress = false;
    bool src_dry = pipe.eof, dst_full = false;
    if (!pipe.eof && pipe.pending < pipe.capacity) {
      ssize_t n = ::splice(src.native_handle(), nullptr, pipe.write_end.get(), nullptr, pipe.capacity - pipe.pending,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        pipe.pending += static_cast<size_t>(n);
        progress = true;
      } else if (n == 0) {
        pipe.eof = true;
        progress = true;
      } else if (errno == EAGAIN) {
        src_dry = true;  // the pipe has room, so the socket has nothing to read
      } else if (errno != EINTR) {
        finish();  // a reset or other error on the source
        return;
      }
    }
    if (pipe.pending > 0) {
      ssize_t n = ::splice(pipe.read_end.get(), nullptr, dst.native_handle(), nullptr, pipe.pending,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        pipe.pending -= static_cast<size_t>(n);
        counter += static_cast<uint64_t>(n);
        moved += static_cast<uint64_t>(n);
        progress = true;
      } else if (n < 0 && errno == EAGAIN) {
        dst_full = true;
      } else if (n < 0 && errno != EINTR) {
        finish();  // the destination is gone (EPIPE, ECONNRESET)
        return;
      }
    }
    if (pipe.eof && pipe.pending == 0) {  // everything sent is delivered: pass the half-close on
      boost::system::error_code ignored;
      dst.shutdown(asio::socket_base::shutdown_send, ignored);
      halfDone();
      return;
    }
    if (progress) {
      touch();
      continue;
    }
    // Stuck: wait for whichever side can unblock it (the pipe full: only the destination).
    if (src_dry && pipe.pending < pipe.capacity && !pipe.read_armed) {
      pipe.read_armed = true;
      src.async_wait(asio::socket_base::wait_read, [self, &src, &dst, &pipe, &counter](boost::system::error_code ec) {
        pipe.read_armed = false;
        if (!ec && !self->finished_) self->splicePump(src, dst, pipe, counter);
      });
    }
    if (dst_full && !pipe.write_armed) {
      pipe.write_armed = true;
      dst.async_wait(asio::socket_base::wait_write, [self, &src, &dst, &pipe, &counter](boost::system::error_code ec) {
        pipe.write_armed = false;
        if (!ec && !self->finished_) self->splicePump(src, dst, pipe, counter);
      });
    }
    return;
  }
}

}  // namespace corral::net
