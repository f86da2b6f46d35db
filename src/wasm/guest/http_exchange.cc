// SPDX-License-Identifier: Apache-2.0
// One corral_http exchange with the egress proxy: the request head built from what the guest
// gave (checked strictly, so the proxy's parser is never the first to see a malformed head),
// the body streamed with the declared framing, the response head parsed and its body de-chunked.
#include "wasm/guest/http_exchange.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <string_view>

#include "wasm/guest/wasi_host.h"

namespace corral::wasm::guest {
namespace {

constexpr size_t kMaxHeaders = size_t{32} << 10;
constexpr size_t kMaxResponseHead = size_t{64} << 10;
constexpr size_t kMaxLine = 4096;

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

bool isToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) return false;
  }
  return true;
}

// Tab, visible ASCII and bytes from 0x80: what the proxy's parser accepts in a value.
bool isFieldValue(std::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && u != '\t') || u == 0x7f) return false;
  }
  return true;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Framing, hop-by-hop and the proxy's own headers are the host's to write: a guest that sets
// them could frame a second request inside its body or address one host while naming another.
bool hostOwned(std::string_view name) {
  static constexpr std::string_view kOwned[] = {"host", "content-length", "transfer-encoding", "connection",
                                                "keep-alive", "te", "trailer", "upgrade", "expect",
                                                "proxy-connection", "proxy-authorization"};
  const std::string n = lowered(name);
  for (std::string_view o : kOwned)
    if (n == o) return true;
  return false;
}

uint16_t appendGuestHeaders(std::string_view block, std::string* head) {
  if (block.size() > kMaxHeaders) return kInval;
  while (!block.empty()) {
    const size_t nl = block.find('\n');
    std::string_view line = block.substr(0, nl);
    block.remove_prefix(nl == std::string_view::npos ? block.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return kInval;
    const std::string_view name = line.substr(0, colon), value = trimmed(line.substr(colon + 1));
    if (!isToken(name) || !isFieldValue(value) || hostOwned(name)) return kInval;
    *head += std::string(name) + ": " + std::string(value) + "\r\n";
  }
  return kOk;
}

uint16_t defaultPort(std::string_view scheme) { return scheme == "https" ? 443 : 80; }

// "scheme://host:port" with the host lowercased and the default port written out: the form
// `corral wasm run` gives each lease's origin in.
std::string originOf(std::string_view scheme, std::string_view authority) {
  std::string a = lowered(authority);
  const size_t bracket = a.rfind(']');
  const size_t colon = a.rfind(':');
  const bool has_port = colon != std::string::npos && (bracket == std::string::npos || colon > bracket);
  if (!has_port) a += ":" + std::to_string(defaultPort(scheme));
  return std::string(scheme) + "://" + a;
}

}  // namespace

uint16_t requestHead(const HttpConfig& config, const HttpRequest& req, std::string* head, std::string* tunnel,
                     std::string* tls_host) {
  if (req.method.size() > 32 || !isToken(req.method)) return kInval;
  if (req.url.empty() || req.url.size() > 8192 || req.body_len < -1) return kInval;
  for (char c : req.url)
    if (c <= 0x20 || c >= 0x7f || c == '#') return kInval;
  const size_t sep = req.url.find("://");
  if (sep == std::string::npos) return kInval;
  const std::string scheme = lowered(std::string_view(req.url).substr(0, sep));
  if (scheme != "http" && scheme != "https") return kInval;
  const std::string_view rest = std::string_view(req.url).substr(sep + 3);
  const size_t auth_end = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, auth_end);
  if (authority.empty() || authority.find('@') != std::string_view::npos) return kInval;
  std::string path = auth_end == std::string_view::npos ? "/" : std::string(rest.substr(auth_end));
  if (path.front() == '?') path.insert(0, "/");
  if (tunnel) tunnel->clear();

  if (!req.lease.empty()) {
    const HttpLease* lease = nullptr;
    for (const HttpLease& l : config.leases)
      if (l.name == req.lease) lease = &l;
    if (!lease || originOf(scheme, authority) != lease->origin) return kNotcapable;
    *head = req.method + " /lease/" + lease->name + path + " HTTP/1.1\r\nHost: 127.0.0.1:" +
            std::to_string(config.proxy_port) + "\r\n";
  } else if (scheme == "https") {
    // Origin-form inside a tunnel to the authority (the proxy decides the CONNECT and checks
    // that the TLS SNI names the same host).
    const std::string origin = originOf(scheme, authority);
    const std::string target = origin.substr(std::string("https://").size());
    std::string host = target.substr(0, target.rfind(':'));
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (tunnel) *tunnel = target;
    if (tls_host) *tls_host = host;
    *head = req.method + " " + path + " HTTP/1.1\r\nHost: " + std::string(authority) + "\r\n";
  } else {
    *head = req.method + " http://" + std::string(authority) + path + " HTTP/1.1\r\nHost: " + std::string(authority) + "\r\n";
  }
  if (uint16_t e = appendGuestHeaders(req.headers, head); e != kOk) return e;
  // No framing header for an empty body: a request without one has none (RFC 9112 6.3), and
  // the proxy's broker exchange waits for body bytes after "Content-Length: 0".
  if (req.body_len < 0) *head += "Transfer-Encoding: chunked\r\n";
  else if (req.body_len > 0) *head += "Content-Length: " + std::to_string(req.body_len) + "\r\n";
  *head += "Connection: close\r\n\r\n";
  return kOk;
}

uint16_t HttpExchange::open(const HttpConfig& config, const HttpRequest& req, std::unique_ptr<HttpExchange>* out) {
  std::string head, tunnel, tls_host;
  if (uint16_t e = requestHead(config, req, &head, &tunnel, &tls_host); e != kOk) return e;
  if (config.proxy_port == 0) return kNotcapable;
  UniqueFd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return wasiErrno(errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(config.proxy_port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int rc;
  do rc = ::connect(sock.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) return kIo;
  std::unique_ptr<HttpExchange> x(new HttpExchange(std::move(sock)));
  x->head_method_ = req.method == "HEAD";
  x->body_left_ = req.body_len;
  if (!tunnel.empty())
    if (uint16_t e = x->openTunnel(tunnel, tls_host, config.ca_file); e != kOk) return e;
  if (!x->tunnel_refused_)
    if (uint16_t e = x->sendAll(head.data(), head.size()); e != kOk) return e;
  *out = std::move(x);
  return kOk;
}

uint16_t HttpExchange::openTunnel(const std::string& target, const std::string& host, const std::string& ca_file) {
  const std::string connect = "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n";
  if (uint16_t e = sendAll(connect.data(), connect.size()); e != kOk) return e;
  const size_t end = [this] {
    size_t at;
    while ((at = in_.find("\r\n\r\n")) == std::string::npos)
      if (in_.size() > kMaxResponseHead || !fill()) return std::string::npos;
    return at;
  }();
  if (end == std::string::npos) return kIo;
  if (in_.compare(0, 9, "HTTP/1.1 ") != 0 && in_.compare(0, 9, "HTTP/1.0 ") != 0) return kIo;
  if (in_.compare(9, 3, "200") != 0) {
    tunnel_refused_ = true;  // in_ holds the refusal's head (and what came of its body)
    return kOk;
  }
  if (in_.size() != end + 4) return kIo;  // nothing may precede the TLS server's first flight
  in_.clear();
  return TlsClient::connect(sock_.get(), host, ca_file, &tls_);
}

uint16_t HttpExchange::sendAll(const char* data, size_t len) {
  for (size_t done = 0; done < len;) {
    const ssize_t n = tls_ ? tls_->write(data + done, len - done) : ::send(sock_.get(), data + done, len - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return kIo;
    done += static_cast<size_t>(n);
  }
  return kOk;
}

uint16_t HttpExchange::writeBody(const uint8_t* data, size_t len) {
  if (state_ != State::kRequest) return kInval;
  const auto* bytes = reinterpret_cast<const char*>(data);
  if (body_left_ >= 0) {
    if (len > static_cast<uint64_t>(body_left_)) return kInval;
    body_left_ -= static_cast<int64_t>(len);
    return tunnel_refused_ ? uint16_t{kOk} : sendAll(bytes, len);
  }
  if (tunnel_refused_) return kOk;  // nobody is listening: the response is the refusal
  if (len == 0) return kOk;  // an empty chunk would end the body
  char size[24];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", len);
  if (uint16_t e = sendAll(size, static_cast<size_t>(n)); e != kOk) return e;
  if (uint16_t e = sendAll(bytes, len); e != kOk) return e;
  return sendAll("\r\n", 2);
}

bool HttpExchange::fill() {
  if (eof_) return false;
  char buf[65536];
  ssize_t n;
  if (tls_) n = tls_->read(buf, sizeof buf);
  else do n = ::read(sock_.get(), buf, sizeof buf);
    while (n < 0 && errno == EINTR);
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  in_.append(buf, static_cast<size_t>(n));
  return true;
}

uint16_t HttpExchange::openResponse() {
  if (state_ != State::kRequest || body_left_ > 0) return kInval;
  if (body_left_ < 0 && !tunnel_refused_)
    if (uint16_t e = sendAll("0\r\n\r\n", 5); e != kOk) return e;
  state_ = State::kResponse;
  for (;;) {
    size_t end;
    while ((end = in_.find("\r\n\r\n")) == std::string::npos) {
      if (in_.size() > kMaxResponseHead || !fill()) return kIo;
    }
    if (end + 4 > kMaxResponseHead) return kIo;
    const std::string head = in_.substr(0, end + 2);
    in_.erase(0, end + 4);
    response_headers_.clear();
    const uint16_t e = parseHead(head);
    if (e != kOk && e != kNotcapable) return e;
    // An interim response (100 Continue and the like) is followed by the real one.
    if (status_ >= 100 && status_ < 200 && status_ != 101) continue;
    return e;
  }
}

uint16_t HttpExchange::parseHead(const std::string& head) {
  const size_t eol = head.find("\r\n");
  const std::string_view line = std::string_view(head).substr(0, eol);
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[8] != ' ') return kIo;
  status_ = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (line[i] < '0' || line[i] > '9') return kIo;
    status_ = status_ * 10 + (line[i] - '0');
  }
  bool chunked = false, denied = false;
  std::optional<uint64_t> length;
  for (size_t at = eol + 2; at < head.size();) {
    const size_t next = head.find("\r\n", at);
    const std::string_view h = std::string_view(head).substr(at, next - at);
    at = next + 2;
    const size_t colon = h.find(':');
    if (colon == std::string_view::npos || !isToken(h.substr(0, colon))) return kIo;
    const std::string name = lowered(h.substr(0, colon));
    const std::string_view value = trimmed(h.substr(colon + 1));
    if (!isFieldValue(value)) return kIo;
    response_headers_ += std::string(h.substr(0, colon)) + ": " + std::string(value) + "\n";
    if (name == "transfer-encoding" && lowered(value).find("chunked") != std::string::npos) chunked = true;
    if (name == "x-corral-denied") denied = true;
    if (name == "content-length") {
      if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string_view::npos) return kIo;
      const uint64_t n = std::stoull(std::string(value));
      if (length && *length != n) return kIo;
      length = n;
    }
  }
  const bool bodiless = head_method_ || status_ == 204 || status_ == 304 || (status_ >= 100 && status_ < 200);
  if (bodiless) framing_ = Framing::kNone;
  else if (chunked) framing_ = Framing::kChunked;
  else if (length) framing_ = Framing::kLength, left_ = *length;
  else framing_ = Framing::kUntilClose;
  return denied ? kNotcapable : kOk;
}

uint16_t HttpExchange::readLine(std::string* line) {
  size_t end;
  while ((end = in_.find("\r\n")) == std::string::npos) {
    if (in_.size() > kMaxLine || !fill()) return kIo;
  }
  *line = in_.substr(0, end);
  in_.erase(0, end + 2);
  return kOk;
}

uint16_t HttpExchange::readBody(uint8_t* data, size_t len, size_t* got) {
  *got = 0;
  if (state_ != State::kResponse) return kInval;
  switch (framing_) {
    case Framing::kNone: return kOk;
    case Framing::kChunked: return readChunked(data, len, got);
    case Framing::kLength:
    case Framing::kUntilClose: break;
  }
  if (len == 0 || (framing_ == Framing::kLength && left_ == 0)) return kOk;
  if (in_.empty() && !fill()) return framing_ == Framing::kLength ? kIo : kOk;  // cut short / the end
  size_t n = std::min(len, in_.size());
  if (framing_ == Framing::kLength) n = static_cast<size_t>(std::min<uint64_t>(n, left_));
  std::copy_n(in_.data(), n, data);
  in_.erase(0, n);
  if (framing_ == Framing::kLength) left_ -= n;
  *got = n;
  return kOk;
}

uint16_t HttpExchange::readChunked(uint8_t* data, size_t len, size_t* got) {
  std::string line;
  while (len > 0) {
    switch (chunk_) {
      case Chunk::kDone: return kOk;
      case Chunk::kSize: {
        if (uint16_t e = readLine(&line); e != kOk) return e;
        const std::string_view size = trimmed(std::string_view(line).substr(0, line.find(';')));
        if (size.empty() || size.size() > 15 || size.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos)
          return kIo;
        left_ = std::stoull(std::string(size), nullptr, 16);
        chunk_ = left_ == 0 ? Chunk::kTrailers : Chunk::kData;
        break;
      }
      case Chunk::kData: {
        if (in_.empty() && !fill()) return kIo;
        const size_t n = static_cast<size_t>(std::min<uint64_t>(std::min(len, in_.size()), left_));
        std::copy_n(in_.data(), n, data);
        in_.erase(0, n);
        left_ -= n;
        if (left_ == 0) chunk_ = Chunk::kDataEnd;
        *got = n;
        return kOk;
      }
      case Chunk::kDataEnd:
        if (uint16_t e = readLine(&line); e != kOk) return e;
        if (!line.empty()) return kIo;
        chunk_ = Chunk::kSize;
        break;
      case Chunk::kTrailers:
        if (uint16_t e = readLine(&line); e != kOk) return e;
        if (line.empty()) chunk_ = Chunk::kDone;
        break;
    }
  }
  return kOk;
}

}  // namespace corral::wasm::guest
