// SPDX-License-Identifier: Apache-2.0
// SOCKS5 on the proxy's port: method selection (no authentication), one CONNECT request
// decided exactly like an HTTP CONNECT (decideConnect, resolve once on the host, vet, dial
// the vetted address), then the same tunnel: the TLS SNI rule for an https grant, bytes
// unread for a tcp grant. BIND and UDP ASSOCIATE are refused.
#include "net/proxy_connection.h"
#include "net/socks5.h"

namespace corral::net {
namespace {

namespace eg = policy::egress;

// The SOCKS reply code for a refusal: the policy's refusals are "not allowed by ruleset";
// what happened on the way to the upstream keeps its own code, so a client's message says it.
socks5::Reply socksReplyFor(std::string_view rule) {
  if (rule == "no-address") return socks5::Reply::kHostUnreachable;
  if (rule == "upstream-unreachable") return socks5::Reply::kConnectionRefused;
  if (rule == "upstream-timeout") return socks5::Reply::kTtlExpired;
  if (rule == "socks-command-unsupported") return socks5::Reply::kCommandNotSupported;
  if (rule == "socks-address-type") return socks5::Reply::kAddressTypeNotSupported;
  if (rule == "socks-malformed" || rule == "header-timeout" || rule == "too-many-connections" || rule == "proxy-shutdown")
    return socks5::Reply::kGeneralFailure;
  return socks5::Reply::kNotAllowed;
}

}  // namespace

void Connection::sendSocks(std::string bytes, std::function<void()> then) {
  auto owned = std::make_shared<std::string>(std::move(bytes));
  asio::async_write(client_, asio::buffer(*owned), [self = shared_from_this(), owned, then = std::move(then)](
                                                       boost::system::error_code ec, size_t n) {
    self->ev_.bytes_down += n;
    if (self->finished_) return;
    if (ec) {
      self->abort("client-closed");
      return;
    }
    then();
  });
}

void Connection::onSocks() {
  ev_.kind = "socks5";
  if (socks_greeted_) {
    onSocksRequest();
    return;
  }
  const socks5::Greeting g = socks5::parseGreeting(inbuf_);
  if (g.status == socks5::Status::kNeedMore) {
    readHead();
    return;
  }
  if (g.status == socks5::Status::kError) {
    abort("socks-malformed");  // no reply fits a greeting that is not one: close
    return;
  }
  inbuf_.erase(0, g.size);
  if (!g.no_auth_offered) {
    // RFC 1928: 0xFF, and the client closes. No other method is offered: see socks5.h.
    responded_ = true;
    ev_.decision = "refuse";
    ev_.rule = "socks-auth-unsupported";
    ev_.status = 407;
    sendSocks(socks5::greetingReply(false), [this] { drainAndClose(); });
    return;
  }
  socks_greeted_ = true;
  sendSocks(socks5::greetingReply(true), [this] {
    if (responded_) return;
    onSocksRequest();
  });
}

void Connection::onSocksRequest() {
  const socks5::Request req = socks5::parseRequest(inbuf_);
  if (req.status == socks5::Status::kNeedMore) {
    readHead();
    return;
  }
  ++timer_gen_;  // the request arrived: the head deadline no longer applies
  timer_.cancel();
  if (req.status == socks5::Status::kError) {
    if (req.command != 0) ev_.method = socks5::commandName(req.command);
    refuse({req.rule == "bad-host" ? 400 : 501, req.rule, req.error});
    return;
  }
  ev_.method = socks5::commandName(req.command);
  inbuf_.erase(0, req.size);  // bytes sent early belong to the tunnel
  if (!decideTunnel(req.authority)) return;
  resolveAndDial([this] {
    ev_.status = 200;
    if (dest_->scheme == eg::Scheme::kHttps) armClientHelloTimer();
    sendSocks(socks5::reply(socks5::Reply::kSucceeded), [this] {
      if (dest_->scheme == eg::Scheme::kTcp) {
        openTunnel();
      } else {
        checkClientHello();
      }
    });
  });
}

std::string socksRefusal(std::string_view rule) { return socks5::reply(socksReplyFor(rule)); }

}  // namespace corral::net
