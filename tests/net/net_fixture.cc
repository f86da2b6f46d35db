// SPDX-License-Identifier: Apache-2.0
// Upstream helper, test CA, event log and socket clients for the proxy integration tests.
#include "net_fixture.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>

#ifndef CORRAL_NET_TEST_DIR
#error "CORRAL_NET_TEST_DIR must name tests/net"
#endif

namespace corral::net::testing {

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(("(" + cmd + ") 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

std::optional<Helper> startHelper(const std::string& script, const std::vector<std::string>& args,
                                  const std::vector<std::string>& env, std::string* why) {
  // Everything the child needs is built before fork: between fork and exec it only calls
  // async-signal-safe functions. -B keeps __pycache__ out of the source tree.
  std::vector<std::string> argv_s{"python3", "-B", std::string(CORRAL_NET_TEST_DIR) + "/" + script};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  // The added variables come first and replace inherited ones of the same name (python's
  // os.environ keeps the first of duplicates).
  std::vector<std::string> env_s = env;
  for (char** e = environ; *e; ++e) {
    std::string_view var(*e);
    bool replaced = false;
    for (const std::string& add : env)
      replaced |= var.substr(0, var.find('=') + 1) == std::string_view(add).substr(0, add.find('=') + 1);
    if (!replaced) env_s.emplace_back(var);
  }
  std::vector<char*> argv, envp;
  for (std::string& a : argv_s) argv.push_back(a.data());
  for (std::string& e : env_s) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);

  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) {
    *why = "pipe failed";
    return std::nullopt;
  }
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    *why = "pipe failed";
    return std::nullopt;
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::execve(CORRAL_PYTHON3, argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  Helper h;
  h.stdin_fd.reset(in[1]);
  UniqueFd from_child(out[0]);
  if (pid < 0) {
    *why = "fork failed";
    return std::nullopt;
  }
  h.pid = pid;
  char c;
  while (::read(from_child.get(), &c, 1) == 1 && c != '\n') h.ports += c;
  if (h.ports.empty()) {
    *why = script + " printed no port line";
    stopHelper(h);
    return std::nullopt;
  }
  return h;
}

void stopHelper(Helper& h) {
  h.stdin_fd.reset();
  if (h.pid > 0) {
    int status = 0;
    for (int i = 0; i < 50 && ::waitpid(h.pid, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (::kill(h.pid, 0) == 0) {
      ::kill(h.pid, SIGKILL);
      ::waitpid(h.pid, &status, 0);
    }
  }
  h.pid = -1;
}

uint16_t portOf(const Helper& h, const std::string& key) {
  // std::regex is avoided: GCC 12 warns inside it under the sanitizers (-Werror).
  size_t at = h.ports.find("\"" + key + "\": ");
  return at == std::string::npos ? 0 : static_cast<uint16_t>(std::atoi(h.ports.c_str() + at + key.size() + 4));
}

std::string withPorts(std::string s, const std::vector<std::pair<std::string, uint16_t>>& ports) {
  for (const auto& [key, port] : ports)
    for (size_t at; (at = s.find(key)) != std::string::npos;) s.replace(at, key.size(), std::to_string(port));
  return s;
}

bool issueCert(const std::string& dir, const std::string& name, const std::string& cn, const std::string& san) {
  std::string out = run("cd " + dir + " && openssl req -newkey rsa:2048 -nodes -subj /CN=" + cn + " -keyout " + name +
                        ".key -out " + name + ".csr" + " && printf 'subjectAltName=" + san + "\\n' > " + name + ".cnf" +
                        " && openssl x509 -req -in " + name + ".csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out " +
                        name + ".pem -extfile " + name + ".cnf" + " && echo CERT-OK");
  return out.find("CERT-OK") != std::string::npos;
}

std::optional<Upstreams> startUpstreams(std::string* why) {
  if (::access(CORRAL_PYTHON3, X_OK) != 0) {
    *why = "no " CORRAL_PYTHON3;
    return std::nullopt;
  }
  if (run("command -v openssl").empty()) {
    *why = "no openssl CLI to make the test CA";
    return std::nullopt;
  }
  Upstreams u;
  char tmpl[] = "/tmp/corral-net-test-XXXXXX";
  if (!::mkdtemp(tmpl)) {
    *why = "mkdtemp failed";
    return std::nullopt;
  }
  u.dir = tmpl;
  u.cafile = u.dir + "/ca.pem";
  // A throwaway CA and a server certificate for 127.0.0.1 and localhost, made at test time.
  std::string out = run("cd " + u.dir + " && openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=corral-test-ca "
                        "-keyout ca.key -out ca.pem -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign"
                        " && echo CA-OK");
  if (out.find("CA-OK") == std::string::npos) {
    *why = "openssl could not make the test CA: " + out.substr(0, 300);
    stopUpstreams(u);
    return std::nullopt;
  }
  if (!issueCert(u.dir, "server", "localhost", "IP:127.0.0.1,DNS:localhost")) {
    *why = "openssl could not make the test server certificate";
    stopUpstreams(u);
    return std::nullopt;
  }
  auto h = startHelper("upstream.py", {u.dir + "/server.pem", u.dir + "/server.key"}, {}, why);
  if (!h) {
    stopUpstreams(u);
    return std::nullopt;
  }
  u.helper = std::move(*h);
  u.http = portOf(u.helper, "http");
  u.https = portOf(u.helper, "https");
  u.echo = portOf(u.helper, "echo");
  if (!u.http || !u.https || !u.echo) {
    *why = "upstream.py did not start: '" + u.helper.ports + "'";
    stopUpstreams(u);
    return std::nullopt;
  }
  return u;
}

void stopUpstreams(Upstreams& u) {
  stopHelper(u.helper);
  if (!u.dir.empty()) run("rm -rf " + u.dir);
  u.dir.clear();
}

RawReply rawExchange(uint16_t port, const std::string& request) {
  RawReply r;
  int fd = connectLoopback(port);
  if (fd < 0) return r;
  size_t off = 0;
  while (off < request.size()) {
    ssize_t n = ::send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;  // the proxy may refuse and close before it has read everything
    off += static_cast<size_t>(n);
  }
  char buf[65536];
  while (true) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) {
      r.closed = true;
      break;
    }
    if (n < 0) break;
    r.bytes.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return r;
}

int connectLoopback(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

static std::string httpGetDirect(uint16_t port, const std::string& path) {
  RawReply r = rawExchange(port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  size_t body = r.bytes.find("\r\n\r\n");
  return body == std::string::npos ? "" : r.bytes.substr(body + 4);
}

int upstreamCount(const Upstreams& u, bool https) {
  if (https) {
    std::string out = run(std::string(CORRAL_PYTHON3) +
                          " -c \"import ssl,urllib.request as u;print(u.urlopen('https://127.0.0.1:" + std::to_string(u.https) +
                          "/__count',context=ssl.create_default_context(cafile='" + u.cafile + "')).read().decode())\"");
    return std::atoi(out.c_str());
  }
  return std::atoi(httpGetDirect(u.http, "/__count").c_str());
}

std::string upstreamLastHead(const Upstreams& u) { return httpGetDirect(u.http, "/__last"); }

int statusOf(const std::string& response) {
  if (response.size() < 12 || response.compare(0, 5, "HTTP/") != 0) return 0;
  return std::atoi(response.c_str() + 9);
}

std::string deniedOf(const std::string& response) {
  size_t end = response.find("\r\n\r\n");
  std::string head = response.substr(0, end);
  for (char& c : head)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  const std::string key = "\r\nx-corral-denied: ";
  size_t at = head.find(key);
  if (at == std::string::npos) return "";
  at += key.size();
  return response.substr(at, response.find("\r\n", at) - at);
}

void EventLog::add(const ConnectionEvent& e) {
  std::lock_guard<std::mutex> l(mu_);
  events_.push_back(e);
}

std::vector<ConnectionEvent> EventLog::all() {
  std::lock_guard<std::mutex> l(mu_);
  return events_;
}

size_t EventLog::size() {
  std::lock_guard<std::mutex> l(mu_);
  return events_.size();
}

std::optional<ConnectionEvent> EventLog::waitFor(const std::string& rule, size_t index_at_least) {
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard<std::mutex> l(mu_);
      for (size_t k = index_at_least; k < events_.size(); ++k)
        if (events_[k].rule == rule) return events_[k];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

std::shared_ptr<const ClientPolicy> policyOf(const std::string& tag, const std::vector<std::string>& grants) {
  auto parsed = policy::egress::parseGrants(grants);
  if (!parsed.ok()) std::abort();
  return std::make_shared<ClientPolicy>(ClientPolicy{tag, *parsed});
}

}  // namespace corral::net::testing
