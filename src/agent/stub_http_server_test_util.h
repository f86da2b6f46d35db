// SPDX-License-Identifier: Apache-2.0
// Test-only: an in-process HTTP/1.1 server on 127.0.0.1:0 that answers queued responses, one
// connection per request, and records every request. Header-only so that no test helper
// ends up in corral_agent (which globs src/agent/*.cc).
#pragma once
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"

namespace corral::agent::testing {

class StubHttpServer {
 public:
  struct Request {
    std::string method;
    std::string path;
    std::map<std::string, std::string> headers;  // names lowercased
    std::string body;
    std::string head;                             // request line and headers, as received
  };
  struct Response {
    int status = 200;
    std::string body;
    std::vector<std::string> headers;  // extra "Name: value" lines
    bool never_answer = false;         // read the request, then wait until the client leaves
    bool omit_content_length = false;  // body delimited by closing the connection
  };

  StubHttpServer() {
    listen_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (!listen_.valid() || ::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_.get(), 16) != 0 ||
        ::getsockname(listen_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      return;  // port() stays 0; tests assert on it
    port_ = ntohs(addr.sin_port);
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return;
    stop_read_.reset(p[0]);
    stop_write_.reset(p[1]);
    thread_ = std::thread([this] { serve(); });
  }
  ~StubHttpServer() {
    if (thread_.joinable()) {
      char c = 'x';
      (void)!::write(stop_write_.get(), &c, 1);
      thread_.join();
    }
  }
  StubHttpServer(const StubHttpServer&) = delete;
  StubHttpServer& operator=(const StubHttpServer&) = delete;

  uint16_t port() const { return port_; }
  std::string url(const std::string& suffix = "") const {
    return "http://127.0.0.1:" + std::to_string(port_) + suffix;
  }
  void enqueue(Response r) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(r));
  }
  void enqueueJson(std::string body, int status = 200) {
    Response r;
    r.status = status;
    r.body = std::move(body);
    r.headers = {"Content-Type: application/json"};
    enqueue(std::move(r));
  }
  std::vector<Request> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  // Waits until fd is readable or stop is signalled; false on stop.
  bool waitReadable(int fd) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
    while (true) {
      int n = ::poll(fds, 2, -1);
      if (n < 0) continue;
      if (fds[1].revents != 0) return false;
      if (fds[0].revents != 0) return true;
    }
  }

  void serve() {
    while (waitReadable(listen_.get())) {
      UniqueFd conn(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn.valid()) continue;
      Request req;
      if (!readRequest(conn.get(), req)) continue;
      Response resp;
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(req);
        if (queue_.empty()) {
          resp.status = 599;
          resp.body = "stub: no response queued";
        } else {
          resp = std::move(queue_.front());
          queue_.pop_front();
        }
      }
      if (resp.never_answer) {
        // Until the client gives up (EOF) or the test ends.
        char buf[256];
        while (waitReadable(conn.get()) && ::read(conn.get(), buf, sizeof buf) > 0) {
        }
        continue;
      }
      std::string out = "HTTP/1.1 " + std::to_string(resp.status) + " Stub\r\n";
      for (const std::string& h : resp.headers) out += h + "\r\n";
      if (!resp.omit_content_length) out += "Content-Length: " + std::to_string(resp.body.size()) + "\r\n";
      out += "Connection: close\r\n\r\n" + resp.body;
      size_t off = 0;
      while (off < out.size()) {
        ssize_t n = ::send(conn.get(), out.data() + off, out.size() - off, MSG_NOSIGNAL);
        if (n <= 0) break;
        off += static_cast<size_t>(n);
      }
    }
  }

  bool readRequest(int fd, Request& req) {
    std::string data;
    char buf[4096];
    size_t header_end = std::string::npos;
    while (header_end == std::string::npos) {
      if (!waitReadable(fd)) return false;
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) return false;
      data.append(buf, static_cast<size_t>(n));
      header_end = data.find("\r\n\r\n");
    }
    req.head = data.substr(0, header_end);
    size_t line_end = req.head.find("\r\n");
    std::string line = req.head.substr(0, line_end);
    size_t sp1 = line.find(' ');
    size_t sp2 = line.find(' ', sp1 + 1);
    req.method = line.substr(0, sp1);
    req.path = line.substr(sp1 + 1, sp2 - sp1 - 1);
    size_t pos = line_end == std::string::npos ? req.head.size() : line_end + 2;
    while (pos < req.head.size()) {
      size_t end = req.head.find("\r\n", pos);
      if (end == std::string::npos) end = req.head.size();
      std::string h = req.head.substr(pos, end - pos);
      size_t colon = h.find(':');
      if (colon != std::string::npos) {
        std::string name = h.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        size_t v = h.find_first_not_of(' ', colon + 1);
        req.headers[name] = v == std::string::npos ? "" : h.substr(v);
      }
      pos = end + 2;
    }
    size_t want = 0;
    if (auto it = req.headers.find("content-length"); it != req.headers.end()) want = std::stoul(it->second);
    req.body = data.substr(header_end + 4);
    while (req.body.size() < want) {
      if (!waitReadable(fd)) return false;
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) return false;
      req.body.append(buf, static_cast<size_t>(n));
    }
    return true;
  }

  UniqueFd listen_;
  UniqueFd stop_read_;
  UniqueFd stop_write_;
  uint16_t port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::deque<Response> queue_;
  std::vector<Request> requests_;
};

}  // namespace corral::agent::testing
