// SPDX-License-Identifier: Apache-2.0
// Requests to the daemon: one connection each, JSON in and out, streams read incrementally.
#include "daemon/api_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <sys/un.h>

#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <algorithm>
#include <boost/asio/write.hpp>
#include <cstring>

#include "daemon/fd_stream.h"
#include "daemon/unix_address.h"

namespace corral::daemon {
namespace {

namespace http = boost::beast::http;
constexpr int kRequestTimeoutMs = 300'000;  // a create builds a sandbox: seconds on a loaded host

}  // namespace

Result<ApiClient> ApiClient::connect() {
  ApiClient c(clientSocket());
  ASSIGN_OR_RETURN(int fd, c.open());
  ::close(fd);
  return c;
}

Result<int> ApiClient::open() const {
  ASSIGN_OR_RETURN(sockaddr_un addr, unixAddress(where_.path));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sysError("socket");
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    return Error(Errc::kUnsupported, "no corral daemon at " + where_.path + " (" + where_.source + ", " + std::strerror(err) +
                                         "); start one with `corral daemon`, or set CORRAL_SOCKET");
  }
  return fd.release();
}

Result<ApiResult> ApiClient::request(const std::string& method, const std::string& target, const std::optional<Json>& body) {
  ASSIGN_OR_RETURN(int raw, open());
  FdStream s(UniqueFd(raw), kRequestTimeoutMs);
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, "corral");
  req.keep_alive(false);
  if (body) {
    req.set(http::field::content_type, "application/json");
    req.body() = dumpJson(*body);
  }
  req.prepare_payload();
  boost::beast::error_code ec;
  http::write(s, req, ec);
  if (ec) return Error(Errc::kIo, "daemon: " + ec.message());
  boost::beast::flat_buffer buf;
  http::response_parser<http::string_body> p;
  p.body_limit(64u << 20);
  http::read(s, buf, p, ec);
  if (ec) return Error(Errc::kIo, "daemon: " + ec.message());
  ApiResult r;
  r.status = static_cast<int>(p.get().result_int());
  auto j = parseJson(p.get().body());
  r.body = j ? *j : Json();
  return r;
}

Result<int> ApiClient::getRaw(const std::string& target, const std::function<bool(int, std::string_view)>& on_bytes) {
  ASSIGN_OR_RETURN(int raw, open());
  FdStream s(UniqueFd(raw), -1);  // a quiet command may print nothing for hours
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "corral");
  req.keep_alive(false);
  boost::beast::error_code ec;
  http::write(s, req, ec);
  if (ec) return Error(Errc::kIo, "daemon: " + ec.message());
  boost::beast::flat_buffer buf;
  http::response_parser<http::buffer_body> p;
  p.body_limit(boost::none);
  http::read_header(s, buf, p, ec);
  if (ec) return Error(Errc::kIo, "daemon: " + ec.message());
  const int status = static_cast<int>(p.get().result_int());
  char chunk[65536];
  while (!p.is_done()) {
    p.get().body().data = chunk;
    p.get().body().size = sizeof chunk;
    // What has arrived, not a full chunk: http::read would hold a line of a command's output
    // back until 64 KiB had followed it (or the stream ended).
    http::read_some(s, buf, p, ec);
    if (ec == http::error::need_buffer) ec = {};
    if (ec) return Error(Errc::kIo, "daemon: stream: " + ec.message());
    const size_t n = sizeof chunk - p.get().body().size;
    if (n && !on_bytes(status, std::string_view(chunk, n))) return status;
  }
  return status;
}

Result<int> ApiClient::stream(const std::string& target, const std::function<bool(const Json&)>& on_line) {
  std::string pending;
  bool malformed = false;
  ASSIGN_OR_RETURN(int status, getRaw(target, [&](int, std::string_view bytes) {
                     pending.append(bytes);
                     for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
                       auto j = parseJson(std::string_view(pending).substr(0, nl));
                       pending.erase(0, nl + 1);
                       if (!j) {
                         malformed = true;
                         return false;
                       }
                       if (!on_line(*j)) return false;
                     }
                     return true;
                   }));
  if (malformed) return Error(Errc::kIo, "daemon: stream: a malformed line");
  return status;
}

Result<ApiResult> ApiClient::download(const std::string& target, const std::function<bool(std::string_view)>& on_bytes) {
  std::string error_body;
  ASSIGN_OR_RETURN(int status, getRaw(target, [&](int st, std::string_view bytes) {
                     if (st / 100 == 2) return on_bytes(bytes);
                     error_body.append(bytes.substr(0, std::min<size_t>(bytes.size(), 65536 - error_body.size())));
                     return error_body.size() < 65536;
                   }));
  ApiResult r;
  r.status = status;
  if (auto j = parseJson(error_body); !error_body.empty() && j) r.body = *j;
  return r;
}

namespace {

// The head of a request whose octet-stream body the caller then writes itself: of size bytes,
// or chunked when size is none.
Result<void> writeBodyHead(FdStream& s, http::verb verb, const std::string& target, std::optional<uint64_t> size) {
  http::request<http::empty_body> req{verb, target, 11};
  req.set(http::field::host, "corral");
  req.set(http::field::content_type, "application/octet-stream");
  if (size) req.content_length(*size);
  else req.chunked(true);
  req.keep_alive(false);
  boost::beast::error_code ec;
  http::request_serializer<http::empty_body> sr{req};
  http::write_header(s, sr, ec);
  if (ec) return Error(Errc::kIo, "daemon: " + ec.message());
  return {};
}

// The answer to such a request. A refusal may come before the whole body was taken (the
// daemon then closes), so it is read even when sending failed (send_ec).
Result<ApiResult> readBodyAnswer(FdStream& s, const boost::beast::error_code& send_ec) {
  boost::beast::flat_buffer buf;
  http::response_parser<http::string_body> p;
  p.body_limit(64u << 10);
  boost::beast::error_code rec;
  http::read(s, buf, p, rec);
  if (rec) return Error(Errc::kIo, "daemon: " + (send_ec ? send_ec.message() : rec.message()));
  ApiResult r;
  r.status = static_cast<int>(p.get().result_int());
  auto j = parseJson(p.get().body());
  r.body = j ? *j : Json();
  return r;
}

}  // namespace

Result<ApiResult> ApiClient::upload(const std::string& target, int fd, uint64_t size) {
  ASSIGN_OR_RETURN(int raw, open());
  FdStream s(UniqueFd(raw), kRequestTimeoutMs);
  RETURN_IF_ERROR(writeBodyHead(s, http::verb::put, target, size));
  boost::beast::error_code ec;
  char chunk[65536];
  for (uint64_t sent = 0; sent < size && !ec;) {
    const ssize_t n = ::read(fd, chunk, static_cast<size_t>(std::min<uint64_t>(sizeof chunk, size - sent)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sysError("read the local file");
    if (n == 0) return Error(Errc::kIo, "the local file shrank while it was sent");
    boost::asio::write(s, boost::asio::buffer(chunk, static_cast<size_t>(n)), ec);
    sent += static_cast<uint64_t>(n);
  }
  return readBodyAnswer(s, ec);
}

Result<ApiResult> ApiClient::postStream(const std::string& target, int fd, int idle_ms, bool* input_ended) {
  ASSIGN_OR_RETURN(int raw, open());
  FdStream s(UniqueFd(raw), kRequestTimeoutMs);
  RETURN_IF_ERROR(writeBodyHead(s, http::verb::post, target, std::nullopt));
  boost::beast::error_code ec;
  char chunk[65536];
  *input_ended = false;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, idle_ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) break;  // idle: this body ends, the input goes on in the next one
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // end of input (or an unreadable one: what was read is what it had)
      *input_ended = true;
      break;
    }
    boost::asio::write(s, http::make_chunk(boost::asio::buffer(chunk, static_cast<size_t>(n))), ec);
    if (ec) break;  // refused or the command stopped reading: the answer below says which
  }
  if (!ec) boost::asio::write(s, http::make_chunk_last(), ec);
  return readBodyAnswer(s, ec);
}

Result<UniqueFd> ApiClient::upgrade(const std::string& target, const std::string& protocol, std::string* early) {
  ASSIGN_OR_RETURN(int raw, open());
  FdStream s(UniqueFd(raw), kRequestTimeoutMs);
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "corral");
  req.set(http::field::connection, "Upgrade");
  req.set(http::field::upgrade, protocol);
  boost::beast::error_code ec;
  http::write(s, req, ec);
  if (ec) return Error(Errc::kIo, "daemon: " + ec.message());
  boost::beast::flat_buffer buf;
  http::response_parser<http::string_body> p;
  p.body_limit(64u << 10);
  http::read_header(s, buf, p, ec);
  if (ec) return Error(Errc::kIo, "daemon: " + ec.message());
  ApiResult r;
  r.status = static_cast<int>(p.get().result_int());
  if (r.status == 101) {
    *early = boost::beast::buffers_to_string(buf.data());
    return UniqueFd(::fcntl(s.fd(), F_DUPFD_CLOEXEC, 3));  // FdStream closes its own
  }
  http::read(s, buf, p, ec);
  auto j = parseJson(p.get().body());
  r.body = j ? *j : Json();
  return Error(Errc::kRefused, apiErrorMessage(r));
}

std::string apiErrorMessage(const ApiResult& r) {
  if (r.body.is_object() && r.body.contains("error") && r.body["error"].is_object() && r.body["error"].contains("message") &&
      r.body["error"]["message"].is_string())
    return r.body["error"]["message"].get<std::string>();
  return "the daemon answered HTTP " + std::to_string(r.status);
}

}  // namespace corral::daemon
