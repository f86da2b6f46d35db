// SPDX-License-Identifier: Apache-2.0
// corral-proxy-bench: a ProxyServer on 127.0.0.1 for bench/proxy_bench.py and manual runs.
//   corral-proxy-bench GRANT...   prints "port=<n>" and serves until stdin closes.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "net/proxy_server.h"

int main(int argc, char** argv) {
  using namespace corral;
  std::vector<std::string> texts(argv + 1, argv + argc);
  auto grants = policy::egress::parseGrants(texts);
  if (!grants.ok()) {
    std::fprintf(stderr, "corral-proxy-bench: %s\n", grants.error().message().c_str());
    return 2;
  }
  auto policy = std::make_shared<net::ClientPolicy>(net::ClientPolicy{"bench", *grants});
  auto server = net::ProxyServer::start({});
  if (!server.ok()) return 1;
  auto port = (*server)->listen("127.0.0.1", 0, policy);
  if (!port.ok()) {
    std::fprintf(stderr, "corral-proxy-bench: %s\n", port.error().message().c_str());
    return 1;
  }
  std::printf("port=%u\n", static_cast<unsigned>(*port));
  std::fflush(stdout);
  char buf[256];
  while (::read(STDIN_FILENO, buf, sizeof buf) > 0) {
  }
  return 0;
}
