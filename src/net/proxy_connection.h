// SPDX-License-Identifier: Apache-2.0
// One client connection of the proxy (internal): head, decision, upstream, relay, event.
#pragma once

#include <atomic>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <unordered_set>

#include "net/http_chunked.h"
#include "net/http_request.h"
#include "net/lease_broker.h"
#include "net/lease_exchange.h"
#include "net/lease_workers.h"
#include "net/placeholder.h"
#include "net/proxy_server.h"
#include "net/response_rewriter.h"
#include "net/upstream_proxy.h"
#include "policy/egress_decide.h"

namespace corral::net {

namespace asio = boost::asio;
using ClientSocket = asio::generic::stream_protocol::socket;
class Connection;

struct ProxyServer::Impl {
  ProxyOptions options;
  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread;
  // Invariant: the members below are touched only on the proxy thread.
  std::unordered_set<Connection*> live;
  std::vector<std::unique_ptr<asio::ip::tcp::acceptor>> acceptors;
  // A sandbox's fd channel (adoptFdChannel) and the policy its connections get.
  struct Channel {
    std::unique_ptr<asio::local::stream_protocol::socket> sock;
    std::shared_ptr<const ClientPolicy> policy;
  };
  std::vector<Channel> channels;
  bool stopping = false;
  std::atomic<size_t> live_count{0};
  LeaseWorkers workers;  // joined in ~ProxyServer after the proxy thread, before io is destroyed

  void start(ClientSocket socket, std::shared_ptr<const ClientPolicy> policy);
  void shutdown();
};

// Status, rule and reason of a refusal sent as an HTTP response.
struct Refusal {
  int status;
  std::string rule;
  std::string reason;
};

// A pipe between two sockets of a tunnel, one per direction (proxy_splice.cc).
struct SplicePipe {
  UniqueFd read_end, write_end;
  size_t capacity = 0;       // F_GETPIPE_SZ
  size_t pending = 0;        // bytes in the pipe, not yet written to the destination
  bool eof = false;          // the source has closed its sending side
  bool read_armed = false;   // a wait for the source to become readable is outstanding
  bool write_armed = false;  // a wait for the destination to become writable is outstanding
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(ProxyServer::Impl& server, ClientSocket client, std::shared_ptr<const ClientPolicy> policy);
  void begin();                       // read the request head
  void refuse(const Refusal& r);      // answer with the refusal, then close
  void abort(std::string_view rule);  // close now (shutdown, timeouts)
  // Close now a connection never served whose client had sent a request: it gets its event.
  void recordUnread(std::string_view rule);

 private:
  using Clock = std::chrono::steady_clock;
  using tcp = asio::ip::tcp;

  void readHead();
  void onHead();
  // proxy_forward.cc
  void handleForward();
  void sendForwardHead();
  void pumpRequestBody();
  std::string forwardHead() const;
  // proxy_connect.cc
  void handleConnect();
  // CONNECT and SOCKS5: records and decides the authority; false when refused (answered).
  bool decideTunnel(std::string_view authority);
  void armClientHelloTimer();  // header_timeout for a tunnel's first TLS flight
  void readClientHello();
  void checkClientHello();
  void refuseInTunnel(const std::string& rule, const std::string& reason);
  // Both tunnels, once their destination is dialled and any TLS check passed: the first
  // bytes (inbuf_) go upstream, then splice both ways.
  void openTunnel();
  // proxy_socks.cc: SOCKS5 on the same port (the first byte tells: 0x05 starts no HTTP method)
  void onSocks();
  void onSocksRequest();
  void sendSocks(std::string bytes, std::function<void()> then);
  // proxy_lease.cc: broker mode, and placeholder mode on forward requests
  bool leaseTarget(std::string* name, std::string* rest) const;
  void handleLease(const std::string& name, const std::string& rest);
  void startLeaseExchange();
  void onLeaseDone(const LeaseOutcome& o);
  bool applyPlaceholders();  // false: refused
  // raw: the body bytes as forwarded (chunk extensions and trailers included); payload: the
  // same body without its chunked framing, where a placeholder split across chunks is whole.
  void feedBodyDetector(std::string_view raw, std::string_view payload);
  void noteSuspect(const Suspect& s);
  void onRewrittenRead(boost::system::error_code ec, size_t n);
  void reportLeaseEvents();
  // proxy_upstream.cc
  void resolveAndDial(std::function<void()> connected);
  void dial(const policy::egress::DialTarget& target, std::function<void()> connected);
  void vetAndDial(const std::vector<policy::egress::IpAddress>& answer, std::function<void()> connected);
  // proxy_upstream.cc: a tunnel through the parent proxy: CONNECT <vetted address>, read its
  // head one byte at a time (no byte of the tunnel is read with it), then `connected`.
  void parentConnect(const policy::egress::DialTarget& target, std::function<void()> connected);
  void readParentHead(std::function<void()> connected);
  std::string parentAuthorizationLine() const;  // "Proxy-Authorization: ...\r\n" or ""
  // proxy_relay.cc
  void relayDown();  // upstream -> client until EOF
  void relayUp();    // client -> upstream until EOF (tunnels)
  void armIdle();
  void armTimer(std::chrono::milliseconds after, std::function<void()> on_expiry);
  void touch() { last_activity_ = Clock::now(); }
  void halfDone();
  // proxy_splice.cc: a tunnel's bytes moved socket -> pipe -> socket by splice(2), never
  // through user memory. False when no pipe could be made (fd limit): use relayUp/Down.
  bool startSpliceRelay();
  template <typename Src, typename Dst>
  void splicePump(Src& src, Dst& dst, SplicePipe& pipe, uint64_t& counter);
  // proxy_refusal.cc
  void finish();
  void drainAndClose();

  ProxyServer::Impl& server_;
  ClientSocket client_;
  tcp::socket upstream_;
  tcp::resolver resolver_;
  asio::steady_timer timer_;
  std::shared_ptr<const ClientPolicy> policy_;
  Clock::time_point started_ = Clock::now();
  Clock::time_point last_activity_ = started_;
  std::string inbuf_;  // request head (and any body bytes read with it); ClientHello in tunnels
  RequestHeadParser parser_;
  std::optional<policy::egress::Destination> dest_;
  ChunkedDecoder chunked_;
  uint64_t body_left_ = 0;  // Content-Length bytes still to forward
  bool body_done_ = false;
  std::unique_ptr<char[]> up_buf_, down_buf_;  // allocated when the relay starts
  std::unique_ptr<SplicePipe> up_pipe_, down_pipe_;  // tunnels relayed by splice(2)
  ConnectionEvent ev_;
  int halves_open_ = 0;
  bool responded_ = false;   // a refusal was sent (or a tunnel refused): at most one
  bool down_busy_ = false;   // a write to the client is in flight
  bool got_bytes_ = false;  // the client sent at least one byte
  bool socks_ = false;      // the client speaks SOCKS5: refusals are SOCKS replies
  bool via_parent_ = false;  // upstream_ is the parent proxy (--upstream-proxy)
  std::string parent_head_;  // the parent's answer to our CONNECT, as it arrives
  bool socks_greeted_ = false;  // the method selection is done; the request comes next
  bool finished_ = false;
  uint64_t tunnel_id_ = 0;  // registered in policy_->tunnels (open_tunnels.h) while open; 0: not
  uint64_t timer_gen_ = 0;  // a timer handler runs only if no re-arm happened since
  // Leases. Broker mode: lease_ and its exchange on a worker. Placeholder mode: the swapped
  // headers (they hold secrets), the leases used, suspects, and the response rewriter.
  const Lease* lease_ = nullptr;
  std::string lease_target_;  // origin-form toward the lease's upstream
  std::shared_ptr<LeaseJob> lease_job_;
  std::optional<LeaseEvent> lease_ev_;
  std::vector<SubstitutedHeader> substituted_;
  std::vector<std::string> ph_used_;
  std::vector<Suspect> suspects_;
  std::string lease_refused_;  // a 429 reason, for the lease event
  std::unique_ptr<PlaceholderDetector> detector_;          // request body, as forwarded
  std::unique_ptr<PlaceholderDetector> payload_detector_;  // a chunked body's data alone
  size_t detector_reported_ = 0;
  std::unique_ptr<ResponseRewriter> rewriter_;
  std::string out_buf_;

  friend struct ProxyServer::Impl;
};

inline constexpr size_t kRelayBuffer = size_t{64} * 1024;
std::string requestedText(std::string_view authority);  // ConnectionEvent::requested
// A request's method for the record: as sent when it is short (a token: the parser checked),
// else its hash. The method is the sandbox's to choose, up to the request line's 8 KiB, and
// every event carries it.
std::string methodText(std::string_view method);
// The authority of a request target, for the record: an absolute-form target's host[:port];
// anything else up to its first '/', '?' or '#', so no path or query is ever recorded.
std::string_view targetAuthority(std::string_view target);
std::string refusalResponse(const Refusal& r);
// The SOCKS5 reply that refuses with `rule` (proxy_socks.cc).
std::string socksRefusal(std::string_view rule);
int statusForRule(policy::egress::Rule rule);

}  // namespace corral::net
