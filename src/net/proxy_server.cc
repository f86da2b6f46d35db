// SPDX-License-Identifier: Apache-2.0
// The proxy's io_context thread, its listeners and fd channels, and the connection registry.
#include "net/proxy_server.h"

#include <sys/resource.h>

#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "net/proxy_connection.h"

namespace corral::net {
namespace {

void receiveFds(ProxyServer::Impl* impl, asio::local::stream_protocol::socket* chan,
                const std::shared_ptr<const ClientPolicy>& policy);

enum class Received { kOne, kNone, kEnd };

// The client has sent bytes nobody has read yet.
bool hasUnreadBytes(int fd) {
  char byte;
  return ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

// A connection from a sandbox's channel: served, or at the proxy's stop only recorded (one
// whose client has sent something gets its event, rule proxy-shutdown) and closed.
void take(ProxyServer::Impl* impl, ClientSocket s, const std::shared_ptr<const ClientPolicy>& policy,
          bool at_shutdown) {
  if (!at_shutdown) {
    impl->start(std::move(s), policy);
    return;
  }
  if (!hasUnreadBytes(s.native_handle())) return;  // it asked for nothing: closed, unrecorded
  // cppcheck-suppress accessMoved ; the move above is in a branch that returns
  std::make_shared<Connection>(*impl, std::move(s), policy)->recordUnread("proxy-shutdown");
}

// One recvmsg: a 1-byte payload with one fd. kNone: nothing queued; kEnd: EOF or a hard error.
// The connection is served, or with `at_shutdown` only recorded: one whose client has sent
// something gets its event (rule proxy-shutdown) and is closed.
Received receiveOne(ProxyServer::Impl* impl, asio::local::stream_protocol::socket* chan,
                    const std::shared_ptr<const ClientPolicy>& policy, bool at_shutdown = false) {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = ::recvmsg(chan->native_handle(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n < 0) return errno == EAGAIN || errno == EINTR ? Received::kNone : Received::kEnd;
  std::vector<UniqueFd> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.emplace_back(fd);
    }
  }
  if (n == 0 && fds.empty()) return Received::kEnd;
  // One fd per message is the protocol; extra fds are closed (by UniqueFd), never served.
  if (fds.size() > 1) log::warn("egress_channel_extra_fds", "tag=" + policy->tag + " fds=" + std::to_string(fds.size()));
  if (msg.msg_flags & MSG_CTRUNC) log::warn("egress_channel_truncated", "tag=" + policy->tag);
  if (!fds.empty()) {
    int fd = fds.front().release();
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    int type = 0;
    socklen_t tlen = sizeof type;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0 ||
        ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) != 0 || type != SOCK_STREAM) {
      log::warn("egress_channel_bad_fd", "tag=" + policy->tag);
      ::close(fd);
    } else {
      ClientSocket s(impl->io);
      boost::system::error_code ec;
      s.assign(asio::generic::stream_protocol(ss.ss_family, 0), fd, ec);
      if (ec) {
        ::close(fd);
      } else {
        take(impl, std::move(s), policy, at_shutdown);
      }
    }
  }
  return n != 0 ? Received::kOne : Received::kEnd;
}

void receiveFds(ProxyServer::Impl* impl, asio::local::stream_protocol::socket* chan,
                const std::shared_ptr<const ClientPolicy>& policy) {
  chan->async_wait(asio::socket_base::wait_read, [impl, chan, policy](boost::system::error_code ec) {
    if (ec || impl->stopping) return;
    if (receiveOne(impl, chan, policy) == Received::kEnd) {
      boost::system::error_code ignored;
      chan->close(ignored);
      return;
    }
    receiveFds(impl, chan, policy);
  });
}

void acceptLoop(ProxyServer::Impl* impl, asio::ip::tcp::acceptor* acceptor, const std::shared_ptr<const ClientPolicy>& policy) {
  auto socket = std::make_shared<ClientSocket>(impl->io);
  acceptor->async_accept(*socket, [impl, acceptor, policy, socket](boost::system::error_code ec) {
    if (ec == asio::error::operation_aborted || impl->stopping) return;
    if (!ec) impl->start(std::move(*socket), policy);
    // EMFILE and friends: keep accepting; the next attempt may succeed once fds free up.
    acceptLoop(impl, acceptor, policy);
  });
}

}  // namespace

void ProxyServer::Impl::start(ClientSocket socket, std::shared_ptr<const ClientPolicy> policy) {
  if (stopping) return;
  const bool over = live.size() >= options.max_connections;
  auto conn = std::make_shared<Connection>(*this, std::move(socket), std::move(policy));
  if (over) {
    conn->refuse({503, "too-many-connections",
                  "the proxy serves at most " + std::to_string(options.max_connections) + " connections"});
    return;
  }
  conn->begin();
}

void ProxyServer::Impl::shutdown() {
  // Connections a sandbox handed over that the loop has not taken yet (the proxy may stop
  // right after its sandbox ended) still get their event: taken here, then aborted below with
  // the rest. Otherwise closing the channel would drop them unrecorded.
  for (Channel& c : channels)
    while (c.sock->is_open() && receiveOne(this, c.sock.get(), c.policy, /*at_shutdown=*/true) == Received::kOne) {
    }
  stopping = true;
  boost::system::error_code ignored;
  for (auto& a : acceptors) a->close(ignored);
  for (Channel& c : channels) c.sock->close(ignored);
  // abort() removes the connection from `live`, so walk a copy.
  std::vector<std::shared_ptr<Connection>> all;
  for (Connection* c : live) all.push_back(c->shared_from_this());
  for (auto& c : all) {
    // A client whose request is still in its socket, unread, asked for something too: it is
    // recorded (finish() records only connections that sent bytes). One whose bytes an
    // unfinished read already took is not: that read's handler never runs now.
    if (!c->got_bytes_ && hasUnreadBytes(c->client_.native_handle())) c->got_bytes_ = true;
    c->abort("proxy-shutdown");
  }
}

ProxyServer::ProxyServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<ProxyServer>> ProxyServer::start(ProxyOptions options) {
  // Lease upstreams are written with write(2) (TlsStream): a peer that went away must be
  // EPIPE, not a signal that ends the process. Asio's own sends use MSG_NOSIGNAL already.
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  if (::sigaction(SIGPIPE, &ign, nullptr) != 0) return sysError("sigaction SIGPIPE");
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  // A tunnel holds up to six descriptors (client, upstream, a splice pipe each way). The
  // usual soft limit of 1024 would run out near 170 tunnels, long before max_connections,
  // and show up as 502s: raise it towards the hard limit, and where even that is too low,
  // lower max_connections so the excess gets the documented 503 instead.
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
    const rlim_t want = std::min<rlim_t>(nofile.rlim_max, 65536);
    if (nofile.rlim_cur < want) {
      nofile.rlim_cur = want;
      (void)::setrlimit(RLIMIT_NOFILE, &nofile);
      (void)::getrlimit(RLIMIT_NOFILE, &nofile);
    }
    constexpr rlim_t kReserve = 128;  // corral's own descriptors besides the tunnels
    const size_t fit = nofile.rlim_cur > kReserve + 6 ? static_cast<size_t>((nofile.rlim_cur - kReserve) / 6) : 1;
    impl->options.max_connections = std::min(impl->options.max_connections, fit);
  }
  Impl* raw = impl.get();
  raw->thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<ProxyServer>(new ProxyServer(std::move(impl)));
}

ProxyServer::~ProxyServer() {
  Impl* impl = impl_.get();
  asio::post(impl->io, [impl] { impl->shutdown(); });
  impl->work.reset();
  impl->thread.join();
  // Every connection was aborted above, which cancelled its lease job: the workers finish
  // promptly. Their completions are posted to a loop that no longer runs; they are
  // destroyed with the io_context below, after the workers are gone.
  impl->workers.stop();
  // Handlers that never ran (the loop ended first) still hold connections; destroying the
  // io_context below runs their destructors on this thread, after the proxy thread is gone.
}

size_t ProxyServer::connectionCount() const { return impl_->live_count.load(); }

void ProxyServer::adopt(UniqueFd client, std::shared_ptr<const ClientPolicy> policy) {
  Impl* impl = impl_.get();
  int fd = client.release();
  asio::post(impl->io, [impl, fd, policy = std::move(policy)] {
    UniqueFd owned(fd);
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0 || impl->stopping) return;
    ClientSocket s(impl->io);
    boost::system::error_code ec;
    s.assign(asio::generic::stream_protocol(ss.ss_family, 0), fd, ec);
    if (ec) return;
    owned.release();
    impl->start(std::move(s), policy);
  });
}

void ProxyServer::adoptFdChannel(UniqueFd unix_sock, std::shared_ptr<const ClientPolicy> policy) {
  Impl* impl = impl_.get();
  int fd = unix_sock.release();
  asio::post(impl->io, [impl, fd, policy = std::move(policy)] {
    UniqueFd owned(fd);
    if (impl->stopping) return;
    auto chan = std::make_unique<asio::local::stream_protocol::socket>(impl->io);
    boost::system::error_code ec;
    chan->assign(asio::local::stream_protocol(), fd, ec);
    if (ec) return;
    owned.release();
    receiveFds(impl, chan.get(), policy);
    impl->channels.push_back({std::move(chan), policy});
  });
}

Result<uint16_t> ProxyServer::listen(const std::string& addr, uint16_t port, std::shared_ptr<const ClientPolicy> policy) {
  Impl* impl = impl_.get();
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(addr, ec);
  if (ec) return Error(Errc::kInvalidArgument, "listen address '" + addr + "': not an IP address");
  auto acceptor = std::make_unique<asio::ip::tcp::acceptor>(impl->io);
  asio::ip::tcp::endpoint ep(ip, port);
  if (acceptor->open(ep.protocol(), ec); ec) return Error(ec.value(), "proxy listen socket");
  acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (acceptor->bind(ep, ec); ec) return Error(ec.value(), "proxy bind " + addr + ":" + std::to_string(port));
  if (acceptor->listen(asio::socket_base::max_listen_connections, ec); ec) return Error(ec.value(), "proxy listen");
  uint16_t bound = acceptor->local_endpoint(ec).port();
  asio::post(impl->io, [impl, a = acceptor.release(), policy = std::move(policy)] {
    std::unique_ptr<asio::ip::tcp::acceptor> owned(a);
    if (impl->stopping) return;
    acceptLoop(impl, a, policy);
    impl->acceptors.push_back(std::move(owned));
  });
  return bound;
}

}  // namespace corral::net
