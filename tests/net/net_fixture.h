// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the proxy integration tests: the python helper processes, a test CA made
// with the openssl CLI, an event log for a ProxyServer, and small socket clients.
#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/unique_fd.h"
#include "net/proxy_server.h"

namespace corral::net::testing {

// A python3 script in tests/net that prints one JSON line of ports, then serves until its
// stdin closes.
struct Helper {
  pid_t pid = -1;
  UniqueFd stdin_fd;  // closing it stops the helper
  std::string ports;  // the JSON line it printed
};

// Starts python3 tests/net/<script> args... with `env` ("NAME=value") added to this process's
// environment; nullopt (and a reason in *why) when it cannot start or printed no port line.
std::optional<Helper> startHelper(const std::string& script, const std::vector<std::string>& args,
                                  const std::vector<std::string>& env, std::string* why);
// Closes its stdin, gives it 5 s to exit, then kills it; reaps it either way.
void stopHelper(Helper& h);
// The number after "key": in the helper's JSON line; 0 when the key is missing.
uint16_t portOf(const Helper& h, const std::string& key);

// Replaces every occurrence of each key in s by its port, keys in the order given (so a key
// that is a prefix of another must come after it).
std::string withPorts(std::string s, const std::vector<std::pair<std::string, uint16_t>>& ports);

// In dir (which holds ca.pem and ca.key): <name>.key and <name>.pem, a certificate for
// subject CN=cn with subjectAltName san, signed by the test CA. False when openssl failed.
bool issueCert(const std::string& dir, const std::string& name, const std::string& cn, const std::string& san);

struct Upstreams {
  Helper helper;
  uint16_t http = 0, https = 0, echo = 0;
  std::string dir;     // temp dir with ca.pem, ca.key, server.pem, server.key
  std::string cafile;  // dir + "/ca.pem"
};

// Starts tests/net/upstream.py with a fresh CA and server cert; nullopt (and a reason in
// *why) when python3 or openssl is missing.
std::optional<Upstreams> startUpstreams(std::string* why);
// Stops the helper and removes the temp dir.
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
