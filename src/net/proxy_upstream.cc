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
  upstream_.async_connect(ep, [self = shared_from_this(), connected = std::move(connected)](boost::system::error_code ec) {
    if (self->finished_) return;
    if (ec) {
      self->refuse({502, "upstream-unreachable", self->ev_.destination + " at " + self->ev_.resolved + ": " + ec.message()});
      return;
    }
    ++self->timer_gen_;
    self->timer_.cancel();
    boost::system::error_code ignored;
    self->upstream_.set_option(asio::ip::tcp::no_delay(true), ignored);
    connected();
  });
}

}  // namespace corral::net
