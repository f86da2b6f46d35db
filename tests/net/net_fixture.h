// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the proxy integration tests: the upstream helper process, a test CA made
// with the openssl CLI, a ProxyServer that records its events, and small socket clients.
#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "net/proxy_server.h"

namespace corral::net::testing {

struct Upstreams {
  pid_t pid = -1;
  int stdin_fd = -1;  // closing it stops the helper
  uint16_t http = 0, https = 0, echo = 0;
  std::string dir;     // temp dir with ca.pem, server.pem, server.key
  std::string cafile;  // dir + "/ca.pem"
};

// Starts tests/net/upstream.py with a fresh CA and server cert; nullopt (and a reason in
// *why) when python3 or openssl is missing.
std::optional<Upstreams> startUpstreams(std::string* why);
void stopUpstreams(Upstreams& u);

// Requests counted by the upstream HTTP (https=false) or HTTPS server, asked directly.
int upstreamCount(const Upstreams& u, bool https);
std::string upstreamLastHead(const Upstreams& u);

class EventLog {
 public:
  void add(const ConnectionEvent& e);
  std::vector<ConnectionEvent> all();
  // Waits (bounded) until an event with `rule` arrived; returns it.
  std::optional<ConnectionEvent> waitFor(const std::string& rule, size_t index_at_least = 0);
  size_t size();

 private:
  std::mutex mu_;
  std::vector<ConnectionEvent> events_;
};

std::shared_ptr<const ClientPolicy> policyOf(const std::string& tag, const std::vector<std::string>& grants);

// Runs a shell command, returns stdout+stderr.
std::string run(const std::string& cmd);

// Connects to 127.0.0.1:port (blocking, 20 s timeouts).
int connectLoopback(uint16_t port);
// Sends bytes, reads until EOF (or timeout): returns what came back and whether EOF was seen.
struct RawReply {
  std::string bytes;
  bool closed = false;
};
RawReply rawExchange(uint16_t port, const std::string& request);
int statusOf(const std::string& response);
std::string deniedOf(const std::string& response);  // X-Corral-Denied value, "" if none

}  // namespace corral::net::testing
