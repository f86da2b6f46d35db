// SPDX-License-Identifier: Apache-2.0
// runLeaseExchange: the blocking half of broker mode, on a lease worker thread.
#include "net/lease_exchange.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>

#include "net/http_chunked.h"
#include "net/response_rewriter.h"

namespace corral::net {
namespace {

namespace eg = policy::egress;
using Clock = std::chrono::steady_clock;
constexpr size_t kBuffer = size_t{64} * 1024;

Result<void> waitFd(int fd, short events, std::chrono::milliseconds timeout, std::string_view what) {
  auto deadline = Clock::now() + timeout;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Error(ETIMEDOUT, std::string(what) + ": timed out");
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (n < 0 && errno != EINTR) return sysError(std::string(what) + ": poll");
    if (n > 0) return {};
  }
}

// Socket reads and writes that never depend on the fd's O_NONBLOCK flag, which the proxy's
// event loop shares with this dup: MSG_DONTWAIT plus poll with a timeout.
Result<size_t> recvSome(int fd, std::span<char> buf, std::chrono::milliseconds timeout, std::string_view what) {
  while (true) {
    ssize_t n = ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return sysError(std::string(what));
    RETURN_IF_ERROR(waitFd(fd, POLLIN, timeout, what));
  }
}

Result<void> sendAll(int fd, std::string_view data, std::chrono::milliseconds timeout, std::string_view what) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return sysError(std::string(what));
    RETURN_IF_ERROR(waitFd(fd, POLLOUT, timeout, what));
  }
  return {};
}

void wipe(std::string& s) {
  volatile char* p = s.data();
  for (size_t i = 0; i < s.size(); ++i) p[i] = 0;
  s.clear();
}

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// TLS toward an https grant, the TCP socket itself toward an http one.
class Upstream {
 public:
  Upstream(int fd, std::chrono::milliseconds io_timeout) : fd_(fd), io_timeout_(io_timeout) {}
  void useTls(TlsStream s) { tls_.emplace(std::move(s)); }
  Result<size_t> read(std::span<char> buf) {
    if (tls_) return tls_->read(buf);
    return recvSome(fd_, buf, io_timeout_, "upstream read");
  }
  Result<void> writeAll(std::string_view data) {
    if (tls_) return tls_->writeAll(data);
    return sendAll(fd_, data, io_timeout_, "upstream write");
  }

 private:
  int fd_;
  std::chrono::milliseconds io_timeout_;
  std::optional<TlsStream> tls_;
};

// The request head sent upstream. Holds the secret: the caller wipes it after sending.
std::string upstreamHead(const LeaseCall& call) {
  const Lease& lease = *call.lease;
  const eg::Grant& g = lease.grant();
  const std::set<std::string> listed = connectionListed(call.head.headers);  // hop-by-hop for this request
  std::string out = call.head.method + " " + call.upstream_target + " HTTP/1.1\r\n";
  out += "Host: " + eg::authorityText(g.host);
  if (g.port != eg::defaultPort(g.scheme)) out += ":" + std::to_string(g.port);
  out += "\r\n";
  for (const Header& hd : call.head.headers) {
    std::string lname = lowered(hd.name);
    const bool framing = lname == "content-length" || lname == "transfer-encoding";
    // The client can neither supply nor duplicate the credential's header: every instance,
    // in any case, is dropped and the proxy's own is added below.
    if (iequals(hd.name, lease.header())) continue;
    if (lname == "host" || lname == "connection" || lname == "proxy-connection" || lname == "keep-alive" ||
        lname == "proxy-authorization" || lname == "te" || lname == "trailer" || lname == "upgrade" ||
        lname == "accept-encoding" || lname == "expect")
      continue;
    if (!framing && listed.count(lname)) continue;
    out += hd.name + ": " + hd.value + "\r\n";
  }
  // Redaction needs bytes it can read.
  out += "Accept-Encoding: identity\r\n";
  Secret value = lease.injectedHeaderValue();
  out += lease.header() + ": ";
  out += value.revealForInjection();  // the one place broker mode puts the secret on the wire
  out += "\r\nConnection: close\r\n\r\n";
  return out;
}

}  // namespace

void LeaseJob::cancel() {
  if (cancelled_.exchange(true)) return;
  ::shutdown(client_.get(), SHUT_RDWR);
  ::shutdown(upstream_.get(), SHUT_RDWR);
}

LeaseOutcome runLeaseExchange(const LeaseCall& call, LeaseJob& job) {
  LeaseOutcome o;
  LeaseBroker& broker = *call.broker;
  const Lease& lease = *call.lease;
  const std::string& name = lease.name();
  auto refuse = [&o](int status, std::string rule, std::string reason) {
    o.refuse_status = status;
    o.rule = std::move(rule);
    o.reason = std::move(reason);
    return o;
  };
  auto stop = [&o](std::string rule, std::string reason) {  // something was sent already
    o.rule = std::move(rule);
    o.reason = std::move(reason);
    return o;
  };
  if (job.cancelled()) return stop("proxy-shutdown", "");
  const TlsOptions& tls_options = broker.tls().options();
  Upstream up(job.upstream(), tls_options.io_timeout);
  if (lease.grant().scheme == eg::Scheme::kHttps) {
    UniqueFd dup(::fcntl(job.upstream(), F_DUPFD_CLOEXEC, 0));
    if (!dup.valid()) return refuse(502, "upstream-unreachable", "lease '" + name + "': dup failed");
    auto tls = TlsStream::handshake(broker.tls(), std::move(dup), lease.grant().host.text);
    if (!tls.ok()) {
      // Nothing has reached the upstream: the credential stays unsent.
      const bool cert = tls.error().code() == static_cast<int>(Errc::kRefused);
      return refuse(502, cert ? "lease-tls-refused" : "upstream-unreachable", "lease '" + name + "': " + tls.error().message());
    }
    up.useTls(std::move(*tls));
  }

  const RequestHead& h = call.head;
  const int cfd = job.client();
  bool expect_continue = false;
  for (const Header& hd : h.headers)
    if (iequals(hd.name, "expect") && iequals(hd.value, "100-continue")) expect_continue = true;
  // The client waits for 100 before its body; the upstream never sees Expect (the proxy
  // sends the whole body either way), so the proxy answers it.
  if (expect_continue && h.framing != Framing::kNone && h.minor_version == 1) {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    if (auto r = sendAll(cfd, kContinue, call.idle_timeout, "client write"); !r.ok()) return stop("client-closed", "");
    o.bytes_down += kContinue.size();
  }

  {
    std::string head = upstreamHead(call);
    auto charged = broker.chargeBytes(name, head.size());
    auto wrote = charged ? Result<void>() : up.writeAll(head);
    const size_t size = head.size();
    wipe(head);
    if (charged) return refuse(429, "lease-limit", *charged);
    if (!wrote.ok()) return refuse(502, "upstream-unreachable", "lease '" + name + "': sending the request failed: " + wrote.error().message());
    o.bytes_up += size;
  }

  // The body, exactly as framed: Content-Length bytes, or chunked bytes as far as the
  // decoder validated them. Bytes past its end (a pipelined request) are never sent.
  std::unique_ptr<char[]> buf = std::make_unique_for_overwrite<char[]>(kBuffer);
  if (h.framing != Framing::kNone) {
    ChunkedDecoder chunked;
    uint64_t left = h.content_length;
    std::string_view pending = call.body_prefix;
    // Content-Length: 0 has no body to wait for: reading first would block until the idle
    // timeout on a client that, rightly, sends nothing more.
    bool done = h.framing == Framing::kContentLength && left == 0;
    while (!done) {
      if (pending.empty()) {
        auto n = recvSome(cfd, {buf.get(), kBuffer}, call.idle_timeout, "client read");
        if (!n.ok() || *n == 0) return stop("incomplete-request", "the client closed inside the request body");
        pending = std::string_view(buf.get(), *n);
      }
      size_t take = 0;
      if (h.framing == Framing::kContentLength) {
        take = static_cast<size_t>(std::min<uint64_t>(left, pending.size()));
        left -= take;
        done = left == 0;
      } else {
        auto st = chunked.feed(pending, &take);
        if (st == ChunkedDecoder::Status::kError) return refuse(400, chunked.error().rule, chunked.error().reason);
        done = st == ChunkedDecoder::Status::kDone;
      }
      if (take > 0) {
        if (auto over = broker.chargeBytes(name, take)) return refuse(429, "lease-limit", *over);
        if (auto r = up.writeAll(pending.substr(0, take)); !r.ok())
          return refuse(502, "upstream-unreachable", "lease '" + name + "': sending the body failed: " + r.error().message());
        o.bytes_up += take;
      }
      pending = done ? std::string_view() : pending.substr(take);
    }
  }

  RewriterOptions ro;
  ro.head_request = h.method == "HEAD";
  ro.client_minor_version = h.minor_version;
  ResponseRewriter rw(broker.patterns(), ro);
  std::string out;
  const uint64_t sent_before = o.bytes_down;  // a 100 Continue does not count as a response
  while (true) {
    auto n = up.read({buf.get(), kBuffer});
    ResponseRewriter::Status st;
    out.clear();
    if (!n.ok()) {
      if (o.bytes_down == sent_before)
        return refuse(502, "upstream-unreachable", "lease '" + name + "': reading the response failed: " + n.error().message());
      o.status = rw.status();
      o.redactions = rw.redactions();
      return stop("lease-response-truncated", n.error().message());
    }
    if (*n == 0) {
      st = rw.finishAtEof(out);
    } else {
      if (auto over = broker.chargeBytes(name, *n)) {
        o.status = rw.status();
        o.redactions = rw.redactions();
        // Before the first response byte a 429 can still say why; after it, the stream is
        // cut, and an HTTP/1.1 client sees a chunked body without its last chunk.
        if (o.bytes_down == sent_before) return refuse(429, "lease-limit", *over);
        return stop("lease-limit", *over);
      }
      st = rw.feed({buf.get(), *n}, out);
    }
    o.status = rw.status();
    o.redactions = rw.redactions();
    if (st == ResponseRewriter::Status::kError) {
      if (o.bytes_down == sent_before) {
        return refuse(502, rw.error().rule, "lease '" + name + "': " + rw.error().reason);
      }
      return stop(rw.error().rule, rw.error().reason);
    }
    if (!out.empty()) {
      if (auto r = sendAll(cfd, out, call.idle_timeout, "client write"); !r.ok()) return stop("client-closed", "");
      o.bytes_down += out.size();
    }
    if (st == ResponseRewriter::Status::kDone) {
      o.complete = true;
      return o;
    }
    if (*n == 0) return stop("lease-response-truncated", "the upstream closed early");  // unreachable: EOF ends or fails
  }
}

}  // namespace corral::net
