// SPDX-License-Identifier: Apache-2.0
// CONNECT tunnels: decide on the authority, dial the vetted address, answer 200; for an
// https grant read the client's first flight and check its TLS SNI against the authority
// before any byte reaches the upstream (a tcp grant's bytes pass unread); then splice.
#include "base/log.h"
#include "net/open_tunnels.h"
#include "net/proxy_connection.h"
#include "net/tls_sni.h"
#include "net/tunnel_sni.h"

namespace corral::net {
namespace {

namespace eg = policy::egress;

// A fatal TLS alert, access_denied (49): the client reports "access denied" instead of a
// bare reset. Record version 3.3 as TLS 1.2 and 1.3 servers send it.
constexpr char kAccessDeniedAlert[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x31};

}  // namespace

bool Connection::decideTunnel(std::string_view authority) {
  ev_.requested = requestedText(authority);
  eg::RequestDecision rd = eg::decideConnect(policy_->grants, authority);
  if (!rd.decision.allowed()) {
    refuse({statusForRule(rd.decision.rule), std::string(eg::ruleId(rd.decision.rule)), rd.decision.reason});
    return false;
  }
  dest_ = std::move(*rd.destination);
  ev_.destination = eg::authorityText(dest_->host) + ":" + std::to_string(dest_->port);
  return true;
}

void Connection::armClientHelloTimer() {
  armTimer(server_.options.header_timeout, [this] {
    refuseInTunnel("header-timeout", "no TLS ClientHello within " + std::to_string(server_.options.header_timeout.count()) + " ms");
  });
}

void Connection::handleConnect() {
  ev_.kind = "connect";
  if (!decideTunnel(parser_.head().target)) return;
  resolveAndDial([this] {
    static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection Established\r\n\r\n";
    inbuf_.erase(0, parser_.head().head_size);  // bytes the client sent early belong to the tunnel
    ev_.status = 200;
    armClientHelloTimer();
    asio::async_write(client_, asio::buffer(kEstablished), [self = shared_from_this()](boost::system::error_code ec, size_t n) {
      self->ev_.bytes_down += n;
      if (self->finished_) return;
      if (ec) {
        self->abort("client-closed");
        return;
      }
      // A tcp grant opened it: the bytes are the granted protocol's, not TLS to check.
      if (self->dest_->scheme == eg::Scheme::kTcp) {
        self->openTunnel();
      } else {
        self->checkClientHello();
      }
    });
  });
}

void Connection::readClientHello() {
  constexpr size_t kStep = 4096;
  const size_t old = inbuf_.size();
  inbuf_.resize(old + kStep);
  client_.async_read_some(asio::buffer(inbuf_.data() + old, kStep), [self = shared_from_this(), old](boost::system::error_code ec, size_t n) {
    self->inbuf_.resize(old + n);
    if (self->finished_ || self->responded_) return;
    if (ec) {
      self->abort("client-closed");
      return;
    }
    self->checkClientHello();
  });
}

// The SNI rule is checkTunnelSni (tunnel_sni.h); nothing reaches the upstream before it.
void Connection::checkClientHello() {
  SniResult r = parseClientHelloSni(inbuf_);
  if (r.status == SniStatus::kNeedMore) {
    if (inbuf_.size() > kMaxClientHello + 1024) {
      refuseInTunnel("tls-malformed", "the ClientHello is larger than 64 KiB");
    } else {
      readClientHello();
    }
    return;
  }
  if (auto refusal = checkTunnelSni(dest_->host, r)) {
    refuseInTunnel(refusal->rule, refusal->reason);
    return;
  }
  openTunnel();
}

void Connection::openTunnel() {
  ev_.decision = "allow";
  ev_.rule = "allowed";
  // What the SSH agent may bind a signature to: a tcp grant's tunnel to the vetted address
  // itself (through a parent proxy, that address is not where this host's bytes go).
  if (policy_->tunnels && dest_ && dest_->scheme == policy::egress::Scheme::kTcp && !via_parent_)
    tunnel_id_ = policy_->tunnels->add({ev_.destination, ev_.resolved});
  touch();
  armIdle();
  auto first = std::make_shared<std::string>(std::move(inbuf_));
  inbuf_ = std::string();  // give the head's memory back: a tunnel may live for hours
  asio::async_write(upstream_, asio::buffer(*first), [self = shared_from_this(), first](boost::system::error_code ec, size_t n) {
    self->ev_.bytes_up += n;
    if (self->finished_) return;
    if (ec) {
      self->finish();
      return;
    }
    self->halves_open_ = 2;
    if (self->startSpliceRelay()) return;
    self->relayUp();
    self->relayDown();
  });
}

void Connection::refuseInTunnel(const std::string& rule, const std::string& reason) {
  if (finished_ || responded_) return;
  responded_ = true;
  ev_.decision = "refuse";
  ev_.rule = rule;
  log::warn("egress_tunnel_refused", "tag=" + ev_.tag + " dest=" + log::value(ev_.destination) + " rule=" + rule +
                                         " reason=" + log::value(reason));
  boost::system::error_code ignored;
  upstream_.close(ignored);  // not one byte of this tunnel reached the upstream
  if (inbuf_.empty() || inbuf_[0] != 0x16) {
    drainAndClose();
    return;
  }
  asio::async_write(client_, asio::buffer(kAccessDeniedAlert), [self = shared_from_this()](boost::system::error_code, size_t n) {
    self->ev_.bytes_down += n;
    self->drainAndClose();
  });
}

}  // namespace corral::net
