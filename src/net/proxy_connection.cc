// SPDX-License-Identifier: Apache-2.0
// A client connection's first phase: read and parse the request head under a deadline,
// then hand over to the forward or CONNECT path.
#include "net/proxy_connection.h"

namespace corral::net {

Connection::Connection(ProxyServer::Impl& server, ClientSocket client, std::shared_ptr<const ClientPolicy> policy)
    : server_(server),
      client_(std::move(client)),
      upstream_(server.io),
      resolver_(server.io),
      timer_(server.io),
      policy_(std::move(policy)) {
  ev_.tag = policy_->tag;
  ev_.kind = "forward";
  server_.live.insert(this);
  server_.live_count.fetch_add(1);
}

void Connection::armTimer(std::chrono::milliseconds after, std::function<void()> on_expiry) {
  const uint64_t gen = ++timer_gen_;
  timer_.expires_after(after);
  timer_.async_wait([self = shared_from_this(), gen, on_expiry = std::move(on_expiry)](boost::system::error_code ec) {
    if (ec || gen != self->timer_gen_ || self->finished_) return;
    on_expiry();
  });
}

void Connection::begin() {
  armTimer(server_.options.header_timeout, [this] {
    // Slowloris: a client gets header_timeout for its whole head, not per byte.
    if (inbuf_.empty()) {
      abort("header-timeout");
    } else {
      refuse({408, "header-timeout", "the request head did not arrive within " +
                                         std::to_string(server_.options.header_timeout.count()) + " ms"});
    }
  });
  readHead();
}

void Connection::readHead() {
  constexpr size_t kStep = 8192;
  const size_t old = inbuf_.size();
  inbuf_.resize(old + kStep);
  client_.async_read_some(asio::buffer(inbuf_.data() + old, kStep),
                          [self = shared_from_this(), old](boost::system::error_code ec, size_t n) {
                            self->inbuf_.resize(old + n);
                            if (n > 0) self->got_bytes_ = true;
                            if (self->finished_ || self->responded_) return;
                            if (ec) {
                              self->abort("incomplete-request");
                              return;
                            }
                            self->onHead();
                          });
}

void Connection::onHead() {
  // No HTTP method starts with byte 5, and a SOCKS5 client's first byte is its version.
  if (socks_ || (!inbuf_.empty() && inbuf_[0] == 0x05)) {
    socks_ = true;
    onSocks();
    return;
  }
  switch (parser_.feed(inbuf_)) {
    case RequestHeadParser::Status::kNeedMore:
      readHead();
      return;
    case RequestHeadParser::Status::kError:
      ev_.method = methodText(parser_.head().method);
      if (ev_.method == "CONNECT") ev_.kind = "connect";
      // Where a refused head was aimed (a smuggling attempt), when its request line parsed.
      ev_.requested = requestedText(ev_.kind == "connect" ? std::string_view(parser_.head().target)
                                                          : targetAuthority(parser_.head().target));
      refuse({400, parser_.error().rule, parser_.error().reason});
      return;
    case RequestHeadParser::Status::kDone:
      break;
  }
  ++timer_gen_;  // the head arrived: its deadline no longer applies
  timer_.cancel();
  ev_.method = methodText(parser_.head().method);
  std::string lease_name, lease_rest;
  if (ev_.method == "CONNECT") {
    handleConnect();
  } else if (leaseTarget(&lease_name, &lease_rest)) {
    handleLease(lease_name, lease_rest);
  } else {
    handleForward();
  }
}

void Connection::recordUnread(std::string_view rule) {
  got_bytes_ = true;
  abort(rule);
}

void Connection::abort(std::string_view rule) {
  if (finished_) return;
  if (ev_.decision.empty()) {
    ev_.decision = "refuse";
    ev_.rule = std::string(rule);
  }
  finish();
}

}  // namespace corral::net
