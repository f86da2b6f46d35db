// SPDX-License-Identifier: Apache-2.0
// The Beast side of HttpServer: accept loop, per-connection read/handle/write with caps.
#include "market/http_server.h"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <sys/socket.h>

#include <thread>

namespace corral::market {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

HttpResponse errorResponse(int status, const char* code) {
  return {status, std::string("{\"error\":{\"code\":\"") + code + "\"}}", {}};
}

template <typename Stream>
void serveConnection(Stream& stream, const HttpLimits& limits, const HttpServer::Handler& handler) {
  beast::flat_buffer buffer(limits.header_bytes + 1024);
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(limits.header_bytes));
    parser.body_limit(limits.body_bytes);
    beast::error_code ec;
    http::read(stream, buffer, parser, ec);
    HttpResponse res;
    bool keep_alive = false;
    unsigned version = 11;
    // End of stream, or the idle timeout (SO_RCVTIMEO) fired: close quietly.
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::would_block ||
        ec == asio::error::try_again)
      return;
    if (ec == http::error::header_limit) {
      res = errorResponse(431, "header_too_large");
    } else if (ec == http::error::body_limit) {
      res = errorResponse(413, "body_too_large");
    } else if (ec) {
      res = errorResponse(400, "malformed_http");
    } else {
      auto& msg = parser.get();
      HttpRequest req;
      req.method = std::string(msg.method_string());
      req.target = std::string(msg.target());
      for (const auto& f : msg) {
        std::string name(f.name_string());
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        req.headers[name] = std::string(f.value());
      }
      req.body = std::move(msg.body());
      keep_alive = msg.keep_alive();
      version = msg.version();
      res = handler(req);
    }
    http::response<http::string_body> out{static_cast<http::status>(res.status), version};
    out.set(http::field::content_type, "application/json");
    out.set(http::field::cache_control, "no-store");
    for (const auto& [k, v] : res.headers) out.set(k, v);
    out.keep_alive(keep_alive);
    out.body() = std::move(res.body);
    out.prepare_payload();
    http::write(stream, out, ec);
    if (ec || !keep_alive) return;
  }
}

class BeastServer final : public HttpServer {
 public:
  BeastServer(const HttpLimits& limits, Handler handler) : limits_(limits), handler_(std::move(handler)), acceptor_(io_) {}

  Result<void> open(const std::string& listen, const std::string& cert, const std::string& key) {
    const size_t colon = listen.rfind(':');
    if (colon == std::string::npos) return Error(Errc::kInvalidArgument, "--listen must be ADDR:PORT");
    std::string host = listen.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    int port_number = 0;
    try {
      port_number = std::stoi(listen.substr(colon + 1));
    } catch (...) {
      return Error(Errc::kInvalidArgument, "--listen port is not a number");
    }
    if (port_number < 0 || port_number > 65535) return Error(Errc::kInvalidArgument, "--listen port out of range");
    boost::system::error_code ec;
    const auto addr = asio::ip::make_address(host, ec);
    if (ec) return Error(Errc::kInvalidArgument, "--listen address is not an IP address");
    const tcp::endpoint ep(addr, static_cast<uint16_t>(port_number));
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return Error(Errc::kIo, "listen " + listen + ": " + ec.message());
    if (!cert.empty() || !key.empty()) {
      if (cert.empty() || key.empty()) return Error(Errc::kInvalidArgument, "--tls-cert and --tls-key go together");
      tls_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
      tls_->set_options(asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1 | asio::ssl::context::no_sslv2 |
                        asio::ssl::context::no_sslv3);
      tls_->use_certificate_chain_file(cert, ec);
      if (!ec) tls_->use_private_key_file(key, asio::ssl::context::pem, ec);
      if (ec) return Error(Errc::kInvalidArgument, "TLS certificate or key unreadable: " + ec.message());
      // A key that is not the certificate's would fail every handshake; refuse it at start.
      if (SSL_CTX_check_private_key(tls_->native_handle()) != 1)
        return Error(Errc::kInvalidArgument, "--tls-key does not match --tls-cert");
    }
    return {};
  }

  uint16_t port() const override { return acceptor_.local_endpoint().port(); }
  void stop() override {
    stopping_ = true;
    // A blocking accept() is not woken by close(); shutdown() of a listening socket is.
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    boost::system::error_code ec;
    acceptor_.close(ec);
  }

  void run() override {
    while (!stopping_) {
      boost::system::error_code ec;
      tcp::socket sock(io_);
      acceptor_.accept(sock, ec);
      if (ec) {
        if (stopping_) return;
        continue;
      }
      if (active_.fetch_add(1) >= limits_.max_connections) {
        --active_;
        continue;  // closed at once: the cap holds before any byte is read
      }
      std::thread([this, s = std::move(sock)]() mutable {
        serve(std::move(s));
        --active_;
      }).detach();
    }
  }

 private:
  void serve(tcp::socket sock) {
    // Blocking I/O with kernel timeouts: a peer that stalls holds one thread for at most
    // idle_seconds per read or write.
    const timeval tv{limits_.idle_seconds, 0};
    ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    try {
      if (tls_) {
        asio::ssl::stream<tcp::socket&> tls(sock, *tls_);
        boost::system::error_code ec;
        tls.handshake(asio::ssl::stream_base::server, ec);
        if (ec) return;
        serveConnection(tls, limits_, handler_);
      } else {
        serveConnection(sock, limits_, handler_);
      }
    } catch (const std::exception&) {
      // Beast throws only on allocation failure here; the connection is dropped.
    }
  }

  HttpLimits limits_;
  Handler handler_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::unique_ptr<asio::ssl::context> tls_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> active_{0};
};

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::start(const std::string& listen, const std::string& tls_cert,
                                                      const std::string& tls_key, HttpLimits limits, Handler handler) {
  auto s = std::make_unique<BeastServer>(limits, std::move(handler));
  RETURN_IF_ERROR(s->open(listen, tls_cert, tls_key));
  return std::unique_ptr<HttpServer>(std::move(s));
}

}  // namespace corral::market
