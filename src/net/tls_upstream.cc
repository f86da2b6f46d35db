// SPDX-License-Identifier: Apache-2.0
// Blocking TLS client: non-blocking socket underneath, poll with deadlines for the timeouts.
#include "net/tls_upstream.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

namespace corral::net {
namespace {

using Clock = std::chrono::steady_clock;

// The most recent OpenSSL error as one line, and the queue cleared.
std::string sslErrorText() {
  unsigned long last = 0;
  while (unsigned long e = ERR_get_error()) last = e;
  if (last == 0) return "unknown TLS error";
  char buf[256];
  ERR_error_string_n(last, buf, sizeof buf);
  return buf;
}

Result<void> waitFor(int fd, short events, Clock::time_point deadline, std::string_view what) {
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Error(ETIMEDOUT, std::string(what) + ": timed out");
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return sysError(std::string(what) + ": poll");
    }
    if (n > 0) return {};
  }
}

// Runs one OpenSSL call until it completes, waiting on the socket as it asks.
// op returns SSL_* style: > 0 done, else SSL_get_error decides.
template <typename Op>
Result<int> drive(ssl_st* ssl, int fd, Clock::time_point deadline, std::string_view what, Op op) {
  while (true) {
    ERR_clear_error();
    errno = 0;
    int r = op();
    if (r > 0) return r;
    int err = SSL_get_error(ssl, r);
    if (err == SSL_ERROR_WANT_READ) {
      RETURN_IF_ERROR(waitFor(fd, POLLIN, deadline, what));
    } else if (err == SSL_ERROR_WANT_WRITE) {
      RETURN_IF_ERROR(waitFor(fd, POLLOUT, deadline, what));
    } else {
      return -err;  // the caller turns it into a message with its own context
    }
  }
}

bool isIpLiteral(const std::string& host) {
  in6_addr buf{};
  return ::inet_pton(AF_INET, host.c_str(), &buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), &buf) == 1;
}

Result<void> setNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return sysError("fcntl F_GETFL");
  if (::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return sysError("fcntl F_SETFL");
  return {};
}

}  // namespace

void TlsStream::Free::operator()(ssl_st* ssl) const { SSL_free(ssl); }

namespace {

struct CtxFree {
  void operator()(ssl_ctx_st* ctx) const { SSL_CTX_free(ctx); }
};
using CtxPtr = std::unique_ptr<ssl_ctx_st, CtxFree>;

CtxPtr newClientCtx() {
  CtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return ctx;
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION) != 1) return nullptr;
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  return ctx;
}

}  // namespace

struct TlsClientContext::State {
  TlsOptions options;
  // Set once: by create() for a CA bundle, by the loader for the system store.
  std::mutex mu;
  std::condition_variable loaded_cv;
  bool loaded = false;
  CtxPtr ctx;
  std::optional<Error> error;  // why ctx could not be made
};

namespace {

// Loader threads, joined at exit (joinLoaders, an atexit handler registered after OpenSSL's
// own, so it runs first): OpenSSL's exit-time cleanup would free what a loader still uses,
// including its per-thread state, released only when the thread ends. Finished ones are joined
// whenever another starts. A process that must not wait ends with _exit (the proxy process,
// egress_serve.cc).
struct Loader {
  std::thread thread;
  std::shared_ptr<std::atomic<bool>> done;
};
std::mutex g_loaders_mu;
std::vector<Loader> g_loaders;

void joinLoaders() {
  std::vector<Loader> all;
  {
    std::lock_guard lock(g_loaders_mu);
    all.swap(g_loaders);
  }
  for (Loader& l : all) l.thread.join();
}

// The system store: OpenSSL's default paths, which honour SSL_CERT_FILE and SSL_CERT_DIR.
void loadSystemStore(const std::shared_ptr<TlsClientContext::State>& state) {
  CtxPtr made = newClientCtx();
  std::optional<Error> error;
  if (!made) error = Error(Errc::kUnsupported, "tls: cannot make a client context: " + sslErrorText());
  else if (SSL_CTX_set_default_verify_paths(made.get()) != 1)
    error = Error(Errc::kUnsupported, "tls: cannot load the system trust store: " + sslErrorText());
  std::lock_guard lock(state->mu);
  if (error) state->error = std::move(error);
  else state->ctx = std::move(made);
  state->loaded = true;
  state->loaded_cv.notify_all();
}

void startLoader(const std::shared_ptr<TlsClientContext::State>& state) {
  static std::once_flag registered;
  std::call_once(registered, [] {
    OPENSSL_init_ssl(0, nullptr);  // its atexit cleanup first, so that ours runs before it
    std::atexit(joinLoaders);
  });
  std::vector<Loader> finished;
  std::lock_guard lock(g_loaders_mu);
  for (auto it = g_loaders.begin(); it != g_loaders.end();) {
    if (!it->done->load()) {
      ++it;
      continue;
    }
    finished.push_back(std::move(*it));
    it = g_loaders.erase(it);
  }
  for (Loader& l : finished) l.thread.join();
  auto done = std::make_shared<std::atomic<bool>>(false);
  try {
    // On a thread of its own holding its own reference to the state: a run that never makes
    // a lease request does not wait for it when its proxy stops. A small share of a busy CPU
    // (a thread's nice is its own on Linux, and the thread ends here), so it fills the gaps
    // the launch leaves.
    g_loaders.push_back({std::thread([state, done] {
                           (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
                           loadSystemStore(state);
                           done->store(true);
                         }),
                         done});
  } catch (const std::system_error&) {
    loadSystemStore(state);  // no thread to be had: load it here
  }
}

}  // namespace

Result<TlsClientContext> TlsClientContext::create(const TlsOptions& options) {
  if (options.connect_timeout.count() <= 0 || options.io_timeout.count() <= 0)
    return Error(Errc::kInvalidArgument, "tls: timeouts must be positive");
  auto state = std::make_shared<State>();
  state->options = options;
  if (options.ca_bundle_path.empty()) {
    startLoader(state);
    return TlsClientContext(std::move(state));
  }
  struct stat st{};
  if (::stat(options.ca_bundle_path.c_str(), &st) != 0) return sysError("tls: CA bundle " + options.ca_bundle_path);
  state->ctx = newClientCtx();
  if (!state->ctx) return Error(Errc::kUnsupported, "tls: cannot make a client context: " + sslErrorText());
  if (SSL_CTX_load_verify_file(state->ctx.get(), options.ca_bundle_path.c_str()) != 1)
    return Error(Errc::kInvalidArgument,
                 "tls: CA bundle " + options.ca_bundle_path + " holds no usable PEM certificate: " + sslErrorText());
  state->loaded = true;
  return TlsClientContext(std::move(state));
}

const TlsOptions& TlsClientContext::options() const { return state_->options; }

Result<ssl_ctx_st*> TlsClientContext::get() const {
  std::unique_lock lock(state_->mu);
  state_->loaded_cv.wait(lock, [this] { return state_->loaded; });
  if (state_->error) return *state_->error;
  return state_->ctx.get();
}

Result<TlsStream> TlsStream::connect(const TlsClientContext& ctx, const policy::egress::IpAddress& address,
                                     uint16_t port, const std::string& host_for_verify) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  int family = address.family == policy::egress::IpAddress::Family::kV4 ? AF_INET : AF_INET6;
  if (family == AF_INET) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    std::memcpy(&sin->sin_addr, address.bytes.data(), 4);
    len = sizeof *sin;
  } else {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    std::memcpy(&sin6->sin6_addr, address.bytes.data(), 16);
    len = sizeof *sin6;
  }
  UniqueFd sock(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!sock.valid()) return sysError("tls: socket");
  std::string what = "tls: connect to " + host_for_verify + " port " + std::to_string(port);
  auto deadline = Clock::now() + ctx.options().connect_timeout;
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    if (errno != EINPROGRESS) return sysError(what);
    RETURN_IF_ERROR(waitFor(sock.get(), POLLOUT, deadline, what));
    int so_error = 0;
    socklen_t so_len = sizeof so_error;
    if (::getsockopt(sock.get(), SOL_SOCKET, SO_ERROR, &so_error, &so_len) != 0) return sysError(what);
    if (so_error != 0) return sysError(what, so_error);
  }
  return handshake(ctx, std::move(sock), host_for_verify);
}

Result<TlsStream> TlsStream::handshake(const TlsClientContext& ctx, UniqueFd connected,
                                       const std::string& host_for_verify) {
  std::string what = "tls: handshake with " + host_for_verify;
  auto deadline = Clock::now() + ctx.options().connect_timeout;
  RETURN_IF_ERROR(setNonBlocking(connected.get()));
  ASSIGN_OR_RETURN(ssl_ctx_st * loaded, ctx.get());
  std::unique_ptr<ssl_st, Free> ssl(SSL_new(loaded));
  if (!ssl) return Error(Errc::kUnsupported, what + ": SSL_new: " + sslErrorText());
  if (host_for_verify.empty()) return Error(Errc::kInvalidArgument, what + ": no host to verify");
  if (isIpLiteral(host_for_verify)) {
    // An IP-literal grant: the certificate must list this address; SNI takes no IP.
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), host_for_verify.c_str()) != 1)
      return Error(Errc::kInvalidArgument, what + ": not an IP address");
  } else {
    SSL_set_hostflags(ssl.get(), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (SSL_set1_host(ssl.get(), host_for_verify.c_str()) != 1 ||
        SSL_set_tlsext_host_name(ssl.get(), host_for_verify.c_str()) != 1)
      return Error(Errc::kInvalidArgument, what + ": cannot set the host to verify: " + sslErrorText());
  }
  if (SSL_set_fd(ssl.get(), connected.get()) != 1) return Error(Errc::kIo, what + ": SSL_set_fd: " + sslErrorText());
  ssl_st* s = ssl.get();
  ASSIGN_OR_RETURN(int r, drive(s, connected.get(), deadline, what, [s] { return SSL_connect(s); }));
  if (r <= 0) {
    long verify = SSL_get_verify_result(s);
    if (verify != X509_V_OK)
      return Error(Errc::kRefused, what + ": certificate refused: " + X509_verify_cert_error_string(verify));
    if (-r == SSL_ERROR_SYSCALL) return Error(Errc::kIo, what + ": connection closed during the handshake");
    return Error(Errc::kIo, what + ": " + sslErrorText());
  }
  // Invariant: SSL_VERIFY_PEER failed the handshake on any verification error; checked
  // again so a configuration slip cannot turn into an unverified connection.
  if (SSL_get_verify_result(s) != X509_V_OK || SSL_get0_peer_certificate(s) == nullptr)
    return Error(Errc::kRefused, what + ": no verified certificate");
  return TlsStream(std::move(connected), std::move(ssl), ctx.options().io_timeout);
}

Result<size_t> TlsStream::read(std::span<char> buf) {
  if (buf.empty()) return size_t{0};
  size_t got = 0;
  ssl_st* s = ssl_.get();
  ASSIGN_OR_RETURN(int r, drive(s, fd_.get(), Clock::now() + io_timeout_, "tls: read",
                                [&] { return SSL_read_ex(s, buf.data(), buf.size(), &got); }));
  if (r > 0) return got;
  if (-r == SSL_ERROR_ZERO_RETURN) return size_t{0};
  if (-r == SSL_ERROR_SYSCALL || ERR_GET_REASON(ERR_peek_last_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
    ERR_clear_error();
    return Error(Errc::kIo, "tls: read: peer closed without close_notify (the response may be truncated)");
  }
  return Error(Errc::kIo, "tls: read: " + sslErrorText());
}

Result<void> TlsStream::writeAll(std::string_view data) {
  ssl_st* s = ssl_.get();
  auto deadline = Clock::now() + io_timeout_;
  while (!data.empty()) {
    size_t wrote = 0;
    ASSIGN_OR_RETURN(int r, drive(s, fd_.get(), deadline, "tls: write",
                                  [&] { return SSL_write_ex(s, data.data(), data.size(), &wrote); }));
    if (r <= 0) return Error(Errc::kIo, "tls: write: " + sslErrorText());
    data.remove_prefix(wrote);
  }
  return {};
}

Result<void> TlsStream::shutdown() {
  ERR_clear_error();
  if (SSL_shutdown(ssl_.get()) < 0) return Error(Errc::kIo, "tls: shutdown: " + sslErrorText());
  return {};
}

std::string TlsStream::protocol() const { return SSL_get_version(ssl_.get()); }

}  // namespace corral::net
