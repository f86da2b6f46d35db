// SPDX-License-Identifier: Apache-2.0
// Refusals (status, X-Corral-Denied, a one-line body), and the end of every connection:
// close, log line, event.
#include <string>

#include "base/sha256.h"
#include "base/log.h"
#include "net/open_tunnels.h"
#include "net/proxy_connection.h"

namespace corral::net {
namespace {

std::string_view reasonPhrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 408: return "Request Timeout";
    case 429: return "Too Many Requests";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Error";
  }
}

// The reason is one line already (policy and parser build it so); this is the last guard
// before bytes go into a response a client will parse.
std::string oneLine(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

}  // namespace

int statusForRule(policy::egress::Rule rule) {
  using policy::egress::Rule;
  switch (rule) {
    case Rule::kBadTarget:
    case Rule::kBadHost:
    case Rule::kBadPort:
    case Rule::kHostHeaderMissing:
    case Rule::kHostHeaderDuplicate:
    case Rule::kHostHeaderMismatch:
      return 400;
    case Rule::kNoAddress:
      return 502;
    default:
      return 403;
  }
}

std::string methodText(std::string_view method) {
  if (method.size() <= 32) return printable(method, 32);
  return "sha256:" + corral::sha256Hex(method);
}

std::string requestedText(std::string_view authority) {
  std::string text;
  // Userinfo may be a credential: it is never recorded, only noted.
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    text = "[userinfo]@";
    authority.remove_prefix(at + 1);
  }
  if (text.size() + authority.size() > 256) return "sha256:" + corral::sha256Hex(authority);
  return text + printable(authority, 256);
}

std::string refusalResponse(const Refusal& r) {
  const std::string body = "corral: egress denied: " + r.rule + ": " + oneLine(r.reason) + "\n";
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + std::string(reasonPhrase(r.status)) + "\r\n";
  out += "Content-Type: text/plain; charset=utf-8\r\n";
  out += "X-Corral-Denied: " + r.rule + "\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += "Connection: close\r\n\r\n";
  out += body;
  return out;
}

void Connection::refuse(const Refusal& r) {
  if (finished_ || responded_) return;
  responded_ = true;
  ev_.decision = "refuse";
  ev_.rule = r.rule;
  ev_.status = r.status;
  boost::system::error_code ignored;
  resolver_.cancel();
  upstream_.close(ignored);
  // A SOCKS5 client reads a SOCKS reply; the rule and reason are in the event and log line.
  auto bytes = std::make_shared<std::string>(socks_ ? socksRefusal(r.rule) : refusalResponse(r));
  asio::async_write(client_, asio::buffer(*bytes), [self = shared_from_this(), bytes](boost::system::error_code, size_t n) {
    self->ev_.bytes_down += n;
    self->drainAndClose();
  });
}

// Closing a socket with unread input makes the kernel send RST, which can destroy the
// response before the client reads it. So: shut down our side, read and discard what the
// client still sends for a moment, then close.
void Connection::drainAndClose() {
  if (finished_) return;
  boost::system::error_code ignored;
  // A read still pending from an earlier phase (the head, a ClientHello, a body) is
  // cancelled: its handler sees responded_ and stops, and only the drain reads from now on.
  client_.cancel(ignored);
  client_.shutdown(asio::socket_base::shutdown_send, ignored);
  armTimer(std::chrono::milliseconds(1000), [this] { finish(); });
  if (!down_buf_) down_buf_ = std::make_unique_for_overwrite<char[]>(kRelayBuffer);
  auto self = shared_from_this();
  auto drained = std::make_shared<size_t>(0);
  auto step = std::make_shared<std::function<void()>>();
  *step = [self, drained, step]() {
    self->client_.async_read_some(asio::buffer(self->down_buf_.get(), kRelayBuffer),
                                  [self, drained, step](boost::system::error_code ec, size_t n) {
                                    *drained += n;
                                    if (ec || *drained > (1u << 20) || self->finished_) {
                                      self->finish();
                                      *step = nullptr;  // break the self-reference cycle
                                      return;
                                    }
                                    (*step)();
                                  });
  };
  (*step)();
}

void Connection::finish() {
  if (finished_) return;
  finished_ = true;
  ++timer_gen_;
  boost::system::error_code ignored;
  timer_.cancel();
  resolver_.cancel();
  if (lease_job_) lease_job_->cancel();  // wakes a lease worker still using the sockets
  upstream_.close(ignored);
  client_.close(ignored);
  server_.live.erase(this);
  server_.live_count.fetch_sub(1);
  if (tunnel_id_ != 0) policy_->tunnels->remove(tunnel_id_);
  ev_.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - started_).count();
  // A connection that never sent a byte asked for nothing: no event, no log line.
  if (!got_bytes_ && ev_.rule != "too-many-connections") return;
  if (ev_.decision.empty()) ev_.decision = "refuse";
  const bool refused = ev_.decision != "allow";
  if (log::enabled(refused ? log::Level::kWarn : log::Level::kInfo)) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.3f", ev_.duration_ms);
    log::write(refused ? log::Level::kWarn : log::Level::kInfo, "egress",
               "tag=" + ev_.tag + " kind=" + ev_.kind + " method=" + printable(ev_.method, 32) +
                   " dest=" + (ev_.destination.empty() ? "-" : log::value(ev_.destination)) +
                   " resolved=" + (ev_.resolved.empty() ? "-" : log::value(ev_.resolved)) +
                   (ev_.internal.empty() ? "" : " internal=" + ev_.internal) + " decision=" + ev_.decision +
                   " rule=" + ev_.rule + " status=" + std::to_string(ev_.status) +
                   " up=" + std::to_string(ev_.bytes_up) + " down=" + std::to_string(ev_.bytes_down) + " ms=" + ms +
                   (ev_.lease.empty() ? "" : " lease=" + log::value(ev_.lease) + " suspects=" + std::to_string(ev_.suspects)));
  }
  reportLeaseEvents();
  if (server_.options.on_event) server_.options.on_event(ev_);
}

}  // namespace corral::net
