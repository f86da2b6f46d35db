// SPDX-License-Identifier: Apache-2.0
// Byte relay between client and upstream: 64 KiB buffers, half-close passed on, bytes
// counted both ways, and one idle deadline for the pair.
#include "net/proxy_connection.h"

namespace corral::net {
namespace {

// "HTTP/1.1 204 ..." -> 204; 0 when the first bytes are no status line.
int statusOf(std::string_view bytes) {
  if (bytes.size() < 12 || bytes.substr(0, 7) != "HTTP/1." || bytes[8] != ' ') return 0;
  int status = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (bytes[i] < '0' || bytes[i] > '9') return 0;
    status = status * 10 + (bytes[i] - '0');
  }
  return status;
}

}  // namespace

void Connection::armIdle() {
  const auto idle = server_.options.idle_timeout;
  const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last_activity_);
  armTimer(since >= idle ? std::chrono::milliseconds(0) : idle - since, [this, idle] {
    if (Clock::now() - last_activity_ >= idle) {
      abort("idle-timeout");
    } else {
      armIdle();
    }
  });
}

void Connection::relayDown() {
  if (!down_buf_) down_buf_ = std::make_unique_for_overwrite<char[]>(kRelayBuffer);
  upstream_.async_read_some(asio::buffer(down_buf_.get(), kRelayBuffer), [self = shared_from_this()](boost::system::error_code ec, size_t n) {
    if (self->finished_ || self->responded_) return;
    if (self->rewriter_) {  // placeholder mode, a lease destination: the response is redacted
      self->onRewrittenRead(ec, n);
      return;
    }
    if (ec) {
      if (self->ev_.kind == "forward" && self->ev_.bytes_down == 0) {
        self->refuse({502, "upstream-unreachable", self->ev_.destination + ": closed without a response"});
        return;
      }
      if (ec != asio::error::eof) {
        self->finish();
        return;
      }
      if (self->ev_.kind == "forward") {
        self->drainAndClose();  // one request per connection: the response is complete
      } else {
        boost::system::error_code ignored;
        self->client_.shutdown(asio::socket_base::shutdown_send, ignored);
        self->halfDone();
      }
      return;
    }
    self->touch();
    if (self->ev_.kind == "forward" && self->ev_.status == 0 && self->ev_.bytes_down == 0)
      self->ev_.status = statusOf(std::string_view(self->down_buf_.get(), n));
    self->down_busy_ = true;
    asio::async_write(self->client_, asio::buffer(self->down_buf_.get(), n), [self](boost::system::error_code ec2, size_t m) {
      self->down_busy_ = false;
      self->ev_.bytes_down += m;
      if (self->finished_) return;
      if (ec2) {
        self->finish();
        return;
      }
      self->relayDown();
    });
  });
}

void Connection::relayUp() {
  if (!up_buf_) up_buf_ = std::make_unique_for_overwrite<char[]>(kRelayBuffer);
  client_.async_read_some(asio::buffer(up_buf_.get(), kRelayBuffer), [self = shared_from_this()](boost::system::error_code ec, size_t n) {
    if (self->finished_ || self->responded_) return;
    if (ec) {
      if (ec != asio::error::eof) {
        self->finish();
        return;
      }
      boost::system::error_code ignored;
      self->upstream_.shutdown(asio::socket_base::shutdown_send, ignored);
      self->halfDone();
      return;
    }
    self->touch();
    asio::async_write(self->upstream_, asio::buffer(self->up_buf_.get(), n), [self](boost::system::error_code ec2, size_t m) {
      self->ev_.bytes_up += m;
      if (self->finished_) return;
      if (ec2) {
        self->finish();
        return;
      }
      self->relayUp();
    });
  });
}

void Connection::halfDone() {
  if (--halves_open_ <= 0) finish();
}

}  // namespace corral::net
