// SPDX-License-Identifier: Apache-2.0
// Accepting, identifying and serving API connections.
#include "daemon/server.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstring>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include "base/log.h"
#include "daemon/fd_stream.h"
#include "daemon/request_target.h"
#include "daemon/unix_address.h"
#include "daemon/warm_pool.h"

namespace corral::daemon {
namespace {

namespace http = boost::beast::http;
std::atomic<int> g_connections{0};

Result<void> makeSocketDir(const std::string& dir, std::optional<gid_t> group) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return sysError("mkdir " + dir);
  UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d.valid()) return sysError("open " + dir);
  struct stat st;
  if (::fstat(d.get(), &st) != 0) return sysError("stat " + dir);
  if (st.st_uid != ::geteuid()) return Error(Errc::kRefused, dir + " belongs to uid " + std::to_string(st.st_uid) + ", not to this daemon");
  if (group && ::fchown(d.get(), static_cast<uid_t>(-1), *group) != 0) return sysError("chown " + dir);
  if (::fchmod(d.get(), group ? 0710 : 0700) != 0) return sysError("chmod " + dir);
  return {};
}

void writeResponse(FdStream& s, const ApiResponse& res, bool keep_alive, boost::beast::error_code& ec) {
  if (res.stream) {
    // An event stream lives as long as its client: a small send buffer keeps what the kernel
    // holds for one that stops reading small too (the bus bounds the rest, events.h).
    if (res.content_type == "text/event-stream") {
      const int bytes = 64 * 1024;
      (void)::setsockopt(s.fd(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    }
    http::response<http::empty_body> head{static_cast<http::status>(res.status), 11};
    head.set(http::field::content_type, res.content_type);
    head.chunked(true);
    head.keep_alive(false);
    http::response_serializer<http::empty_body> sr{head};
    http::write_header(s, sr, ec);
    if (ec) return;
    bool ended = false;
    res.stream([&](std::string_view data) {
      if (ended) return false;
      if (data.empty()) {  // the body ends here (api.h): the client need not wait for our cleanup
        ended = true;
        boost::asio::write(s, http::make_chunk_last(), ec);
        return false;
      }
      boost::asio::write(s, http::make_chunk(boost::asio::buffer(data.data(), data.size())), ec);
      return !ec;
    });
    if (!ec && !ended) boost::asio::write(s, http::make_chunk_last(), ec);
    return;
  }
  http::response<http::string_body> r{static_cast<http::status>(res.status), 11};
  r.set(http::field::content_type, "application/json");
  r.keep_alive(keep_alive);
  r.body() = dumpJson(res.body) + "\n";
  r.prepare_payload();
  http::write(s, r, ec);
}

// Answers a connection that will not be served: its request is read first (bounded, briefly),
// so the client sees the answer instead of a reset on a request it is still writing.
void refuse(UniqueFd fd, const ApiResponse& res) {
  FdStream s(std::move(fd), 2000);
  boost::beast::flat_buffer buf;
  http::request_parser<http::string_body> parser;
  parser.header_limit(kMaxHeaderBytes);
  parser.body_limit(kMaxBodyBytes);
  boost::beast::error_code ec;
  http::read(s, buf, parser, ec);
  writeResponse(s, res, false, ec);
  ::shutdown(s.fd(), SHUT_WR);
}

ApiResponse readError(const boost::beast::error_code& ec, uint64_t body_cap) {
  if (ec == http::error::header_limit)
    return errorResponse(431, "header_too_large", "request header over " + std::to_string(kMaxHeaderBytes) + " bytes");
  if (ec == http::error::body_limit)
    return errorResponse(413, "body_too_large", "request body over " + std::to_string(body_cap) + " bytes");
  return errorResponse(400, "malformed_request", "malformed HTTP request");
}

using Parser = http::request_parser<http::buffer_body>;

// The rest of the body, in pieces of at most 64 KiB, into sink: never more than one piece held.
// Each piece is what has arrived (read_some), not a full 64 KiB: a command's stdin gets a
// line its client sent at once, not when 64 KiB have piled up behind it.
Result<uint64_t> pullBody(FdStream& stream, boost::beast::flat_buffer& buf, Parser& parser, const BodySink& sink) {
  char chunk[65536];
  uint64_t total = 0;
  while (!parser.is_done()) {
    parser.get().body().data = chunk;
    parser.get().body().size = sizeof chunk;
    boost::beast::error_code ec;
    http::read_some(stream, buf, parser, ec);
    if (ec == http::error::need_buffer) ec = {};
    if (ec == http::error::body_limit) return Error(Errc::kLimit, "request body over its cap");
    if (ec) return Error(Errc::kIo, "request body: " + ec.message());
    const size_t n = sizeof chunk - parser.get().body().size;
    total += n;
    if (n) RETURN_IF_ERROR(sink(std::string_view(chunk, n)));
  }
  return total;
}

void serveConnection(UniqueFd fd, Peer peer, ApiContext& ctx) {
  FdStream stream(std::move(fd), kIoTimeoutMs);
  boost::beast::flat_buffer buf;
  for (;;) {
    // The header first: an upload's body then goes to its handler piece by piece; any other
    // body is read whole, up to kMaxBodyBytes.
    Parser parser;
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(kMaxUploadBytes);
    boost::beast::error_code ec;
    http::read_header(stream, buf, parser, ec);
    if (ec == http::error::end_of_stream || ec == boost::asio::error::eof || ec == boost::asio::error::timed_out) return;
    if (ec) {
      writeResponse(stream, readError(ec, kMaxUploadBytes), false, ec);
      return;
    }
    const auto& msg = parser.get();
    ApiRequest req;
    req.method = std::string(msg.method_string());
    bool ok = false;
    req.segments = splitTarget(std::string_view(msg.target().data(), msg.target().size()), &ok);
    req.peer = peer;
    if (parser.upgrade()) req.upgrade = std::string(msg[http::field::upgrade]);
    const bool upload = ok && isStreamedUpload(req.method, req.segments);
    if (upload) {
      if (msg[http::field::expect] == "100-continue") {
        static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
        boost::asio::write(stream, boost::asio::buffer(kContinue, sizeof kContinue - 1), ec);
        if (ec) return;
      }
      req.body_stream = [&](const BodySink& sink) { return pullBody(stream, buf, parser, sink); };
    } else {
      const auto length = parser.content_length();
      if (length && *length > kMaxBodyBytes) {
        writeResponse(stream, readError(http::error::body_limit, kMaxBodyBytes), false, ec);
        return;
      }
      auto whole = pullBody(stream, buf, parser, [&](std::string_view piece) -> Result<void> {
        if (req.body.size() + piece.size() > kMaxBodyBytes) return Error(Errc::kLimit, "body");
        req.body.append(piece);
        return {};
      });
      if (!whole) {
        writeResponse(stream, whole.error().code() == static_cast<int>(Errc::kLimit) ? readError(http::error::body_limit, kMaxBodyBytes)
                                                                                      : readError({}, 0), false, ec);
        return;
      }
    }
    // A warm create's refill starts once its answer is out (warm_pool.h).
    WarmPool::DeferWakes defer_pool_wakes;
    ApiResponse res = ok ? route(req, ctx) : errorResponse(400, "invalid_path", "the path must be /v1/... without a query, '%' or empty parts");
    // An upload refused before its body was read: take up to kMaxBodyBytes of it first, so a
    // client still sending a small body reads the answer instead of a broken pipe.
    if (upload && !parser.is_done()) {
      uint64_t drained = 0;
      (void)pullBody(stream, buf, parser, [&](std::string_view piece) -> Result<void> {
        drained += piece.size();
        if (drained > kMaxBodyBytes) return Error(Errc::kLimit, "body");
        return {};
      });
    }
    log::info("request", "method=" + log::value(req.method) + " path=" + log::value(std::string_view(msg.target().data(), std::min<size_t>(msg.target().size(), 200))) +
                             " status=" + std::to_string(res.status) + " peer_uid=" + std::to_string(peer.uid) +
                             " peer_pid=" + std::to_string(peer.pid) + " body_bytes=" + std::to_string(req.body.size()));
    if (res.upgrade) {  // a terminal (api.md): the connection is the route's from here on
      const std::string head = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + res.upgrade_protocol + "\r\n\r\n";
      boost::asio::write(stream, boost::asio::buffer(head), ec);
      if (!ec) res.upgrade(stream.fd(), boost::beast::buffers_to_string(buf.data()));
      return;
    }
    // An upload's body may be left unread (refused early): the connection cannot be reused.
    const bool keep = msg.keep_alive() && !res.stream && !upload;
    writeResponse(stream, res, keep, ec);
    if (ec || !keep) {
      // The answer is whole: its end reaches the client now, not after what this thread still
      // does before the close (a warm create's deferred wake of the pool's filler).
      if (!ec) ::shutdown(stream.fd(), SHUT_WR);
      return;
    }
  }
}

}  // namespace

Result<Server> Server::listen(const ListenOptions& opts) {
  const std::string& path = opts.socket_path;
  if (path.empty() || path[0] != '/') return Error(Errc::kInvalidArgument, "--socket " + path + ": an absolute path is required");
  auto addr_or = unixAddress(path);
  if (!addr_or) return addr_or.error().wrap("--socket");
  sockaddr_un addr = *addr_or;
  RETURN_IF_ERROR(makeSocketDir(path.substr(0, path.rfind('/')), opts.allow_group));
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return Error(Errc::kRefused, path + " exists and is not a socket");
    ::unlink(path.c_str());  // a dead daemon's: the state directory's lock is ours
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sysError("socket");
  const mode_t old = ::umask(opts.allow_group ? 0117 : 0177);  // born with its final mode
  const int rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::umask(old);
  if (rc != 0) return sysError("bind " + path);
  if (opts.allow_group && ::chown(path.c_str(), static_cast<uid_t>(-1), *opts.allow_group) != 0) return sysError("chown " + path);
  if (::listen(fd.get(), 512) != 0) return sysError("listen " + path);
  return Server(std::move(fd), opts);
}

bool Server::allowed(const Peer& peer, int fd) const {
  if (peer.uid == ::geteuid() || peer.uid == 0) return true;
  if (!opts_.allow_group) return false;
  if (peer.gid == *opts_.allow_group) return true;
  gid_t groups[256];
  socklen_t len = sizeof groups;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) != 0) return false;
  for (size_t i = 0; i < len / sizeof(gid_t); ++i)
    if (groups[i] == *opts_.allow_group) return true;
  return false;
}

// The acceptors: threads that each wait in accept() on the listening socket and then serve the
// connection they got themselves. Handing an accepted connection to a new thread (as this did
// before) put a thread's creation and first scheduling, 0.05-3 ms on 2 busy cores, in front of
// every request; here the thread the kernel wakes for a connection (one: accept's wait is
// exclusive, unlike poll's) is the one that answers it. Another is started only when none is
// left waiting, and one that finishes a connection while kIdleAcceptors wait exits, so idle
// threads stay few.
namespace {

constexpr int kIdleAcceptors = 4;

struct Acceptors {
  const Server* server;
  int listen_fd;
  ApiContext* ctx;
  std::atomic<int> idle{0};
};

void acceptLoop(const std::shared_ptr<Acceptors>& a);

void startAcceptor(const std::shared_ptr<Acceptors>& a) {
  try {
    std::thread([a] { acceptLoop(a); }).detach();
  } catch (const std::system_error& e) {
    // The threads that exist still accept once their connections end.
    log::warn("acceptor_start_failed", "reason=" + log::value(e.what()));
  }
}

void acceptLoop(const std::shared_ptr<Acceptors>& a) {
  for (;;) {
    a->idle.fetch_add(1);
    UniqueFd conn(::accept4(a->listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
    const int err = errno;
    const bool last = a->idle.fetch_sub(1) == 1;
    if (!conn.valid()) {
      // EINVAL: serve() shut the socket down on its way out. Otherwise a connection that went
      // away before it was taken, or descriptors exhausted for a moment: wait and go on.
      if (err == EINVAL) return;
      if (err != EINTR && err != ECONNABORTED) ::poll(nullptr, 0, 10);
      continue;
    }
    if (last) startAcceptor(a);  // the next connection needs a waiter
    a->server->handle(std::move(conn), *a->ctx);
    if (a->idle.load() >= kIdleAcceptors) return;
  }
}

}  // namespace

void Server::handle(UniqueFd conn, ApiContext& ctx) const {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return;
  const Peer peer{cred.uid, cred.gid, cred.pid};
  // Counted with the rest, refused peers too: a flood of connections that send nothing must
  // not grow the daemon's threads without bound (each holds this thread up to kIoTimeoutMs).
  if (g_connections.fetch_add(1) >= kMaxConnections) {
    g_connections.fetch_sub(1);
    refuse(std::move(conn), errorResponse(503, "busy", "too many connections"));
    return;
  }
  if (!allowed(peer, conn.get())) {
    log::warn("peer_refused", "peer_uid=" + std::to_string(peer.uid) + " peer_pid=" + std::to_string(peer.pid));
    refuse(std::move(conn), errorResponse(403, "forbidden", "uid " + std::to_string(peer.uid) + " is not served by this daemon"));
  } else {
    serveConnection(std::move(conn), peer, ctx);
  }
  g_connections.fetch_sub(1);
}

void Server::serve(ApiContext& ctx, int stop_fd) {
  // Shared with the acceptors, which outlive this call until they next wake.
  auto a = std::make_shared<Acceptors>();
  a->server = this;
  a->listen_fd = fd_.get();
  a->ctx = &ctx;
  for (int i = 0; i < 2; ++i) startAcceptor(a);
  for (;;) {
    pollfd fds[1] = {{stop_fd, POLLIN, 0}};
    if (::poll(fds, 1, -1) < 0 && errno == EINTR) continue;
    break;
  }
  // Wakes every acceptor blocked in accept() with EINVAL (Linux); the socket stays bound
  // until the process exits, so connecting clients are refused rather than left queued.
  if (::shutdown(fd_.get(), SHUT_RDWR) != 0) log::warn("serve_stop_failed", "errno=" + std::to_string(errno));
}

}  // namespace corral::daemon
