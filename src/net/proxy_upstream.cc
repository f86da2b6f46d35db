// SPDX-License-Identifier: Apache-2.0
// From a decided destination to a connected upstream socket: resolve once (names only),
// vet the whole answer, dial exactly the vetted address, all under connect_timeout.
#include "net/proxy_connection.h"

namespace corral::net {
namespace {

namespace eg = policy::egress;

eg::IpAddress fromAsio(const asio::ip::address& a) {
  if (a.is_v4()) {
    auto b = a.to_v4().to_bytes();
    return eg::ipv4(b[0], b[1], b[2], b[3]);
  }
  auto b = a.to_v6().to_bytes();
  std::array<uint8_t, 16> bytes{};
  std::copy(b.begin(), b.end(), bytes.begin());
  return eg::ipv6(bytes);
}

asio::ip::address toAsio(const eg::IpAddress& ip) {
  if (ip.family == eg::IpAddress::Family::kV4) {
    return asio::ip::address_v4(asio::ip::address_v4::bytes_type{ip.bytes[0], ip.bytes[1], ip.bytes[2], ip.bytes[3]});
  }
  asio::ip::address_v6::bytes_type b{};
  std::copy(ip.bytes.begin(), ip.bytes.end(), b.begin());
  return asio::ip::address_v6(b);
}

std::string dialText(const eg::DialTarget& t) {
  std::string ip = eg::formatIp(t.address);
  if (t.address.family == eg::IpAddress::Family::kV6) ip = "[" + ip + "]";
  return ip + ":" + std::to_string(t.port);
}

}  // namespace

void Connection::resolveAndDial(std::function<void()> connected) {
  const std::string& host = dest_->host.text;
  armTimer(server_.options.connect_timeout, [this] {
    refuse({504, "upstream-timeout", ev_.destination + ": no connection within " +
                                         std::to_string(server_.options.connect_timeout.count()) + " ms"});
  });
  if (!eg::needsResolution(*dest_)) {
    vetAndDial({}, std::move(connected));
    return;
  }
  if (server_.options.resolve) {
    auto answer = server_.options.resolve(host);
    if (!answer.ok()) {
      refuse({502, "no-address", host + ": resolving failed: " + answer.error().message()});
      return;
    }
    vetAndDial(*answer, std::move(connected));
    return;
  }
  // One lookup, every address family; the answer is vetted as a whole below.
  resolver_.async_resolve(host, "", asio::ip::resolver_base::numeric_service,
                          [self = shared_from_this(), connected = std::move(connected)](
                              boost::system::error_code ec, const asio::ip::tcp::resolver::results_type& results) mutable {
                            if (self->finished_ || ec == asio::error::operation_aborted) return;
                            std::vector<eg::IpAddress> answer;
                            if (!ec)
                              for (const auto& entry : results) answer.push_back(fromAsio(entry.endpoint().address()));
                            if (ec && ec != asio::error::host_not_found && ec != asio::error::host_not_found_try_again) {
                              self->refuse({502, "no-address", self->dest_->host.text + ": resolving failed: " + ec.message()});
                              return;
                            }
                            self->vetAndDial(answer, std::move(connected));
                          });
}

void Connection::vetAndDial(const std::vector<eg::IpAddress>& answer, std::function<void()> connected) {
  eg::DialDecision d = eg::vetAddresses(*dest_, answer, policy_->internal);
  if (!d.decision.allowed()) {
    refuse({statusForRule(d.decision.rule), std::string(eg::ruleId(d.decision.rule)), d.decision.reason});
    return;
  }
  ev_.internal = std::move(d.internal);
  dial(*d.dial, std::move(connected));
}

void Connection::dial(const eg::DialTarget& target, std::function<void()> connected) {
  ev_.resolved = dialText(target);
  asio::ip::tcp::endpoint ep(toAsio(target.address), target.port);
  // Corral has decided and pinned the address; the parent only carries the connection there.
  const UpstreamProxy* parent = policy_->upstream.get();
  if (parent != nullptr && !parent->addresses.empty() && !parent->bypasses(dest_->host)) {
    via_parent_ = true;
    ev_.parent = parent->text();
    ep = asio::ip::tcp::endpoint(toAsio(parent->addresses.front()), parent->port);
  }
  upstream_.async_connect(ep, [self = shared_from_this(), target, connected = std::move(connected)](boost::system::error_code ec) mutable {
    if (self->finished_) return;
    if (ec) {
      const std::string where = self->via_parent_ ? "the upstream proxy " + self->ev_.parent : self->ev_.resolved;
      self->refuse({502, "upstream-unreachable", self->ev_.destination + " at " + where + ": " + ec.message()});
      return;
    }
    boost::system::error_code ignored;
    self->upstream_.set_option(asio::ip::tcp::no_delay(true), ignored);
    // A forward request goes to the parent in absolute-form (forwardHead); a tunnel first
    // needs the parent's own tunnel, still under connect_timeout.
    if (self->via_parent_ && self->ev_.kind != "forward") {
      self->parentConnect(target, std::move(connected));
      return;
    }
    ++self->timer_gen_;
    self->timer_.cancel();
    connected();
  });
}

}  // namespace corral::net

namespace corral::net {

std::string Connection::parentAuthorizationLine() const {
  const UpstreamProxy* parent = policy_->upstream.get();
  if (parent == nullptr || !parent->authorization) return "";
  return "Proxy-Authorization: " + std::string(parent->authorization->revealForInjection()) + "\r\n";
}

void Connection::parentConnect(const eg::DialTarget& target, std::function<void()> connected) {
  const std::string authority = dialText(target);
  // The request holds the parent's credential: wiped once written, never logged.
  auto request = std::make_shared<std::string>("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n" +
                                               parentAuthorizationLine() + "\r\n");
  asio::async_write(upstream_, asio::buffer(*request), [self = shared_from_this(), request, connected = std::move(connected)](
                                                           boost::system::error_code ec, size_t) mutable {
    std::fill(request->begin(), request->end(), '\0');
    if (self->finished_) return;
    if (ec) {
      self->refuse({502, "upstream-proxy-refused", self->ev_.destination + ": the upstream proxy " + self->ev_.parent +
                                                       " closed: " + ec.message()});
      return;
    }
    self->readParentHead(std::move(connected));
  });
}

// One byte per read: the parent's head is short, and a byte past it (an SSH server's banner,
// sent as soon as the parent connects) belongs to the tunnel, not to us.
void Connection::readParentHead(std::function<void()> connected) {
  constexpr size_t kMaxParentHead = 8192;
  parent_head_.resize(parent_head_.size() + 1);
  asio::async_read(upstream_, asio::buffer(&parent_head_.back(), 1), [self = shared_from_this(), connected = std::move(connected)](
                                                                          boost::system::error_code ec, size_t) mutable {
    if (self->finished_) return;
    const std::string& head = self->parent_head_;
    const std::string who = self->ev_.destination + ": the upstream proxy " + self->ev_.parent;
    if (ec) {
      self->refuse({502, "upstream-proxy-refused", who + " closed without an answer"});
      return;
    }
    if (!head.ends_with("\r\n\r\n")) {
      if (head.size() >= kMaxParentHead) {
        self->refuse({502, "upstream-proxy-refused", who + " sent a head over 8 KiB"});
        return;
      }
      self->readParentHead(std::move(connected));
      return;
    }
    // "HTTP/1.x 200 ...": only the status is looked at, and only it is reported.
    const bool ok = head.size() >= 12 && head.starts_with("HTTP/1.") && head.substr(8, 5) == " 200 ";
    if (!ok) {
      const std::string status = head.size() >= 12 && head.starts_with("HTTP/1.") ? head.substr(9, 3) : "no status";
      self->refuse({502, "upstream-proxy-refused", who + " answered " + printable(status, 3)});
      return;
    }
    self->parent_head_ = std::string();
    ++self->timer_gen_;
    self->timer_.cancel();
    connected();
  });
}

}  // namespace corral::net
