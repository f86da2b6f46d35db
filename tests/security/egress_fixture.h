// SPDX-License-Identifier: Apache-2.0
// Host-side servers for the egress and lease claim tests (egress_servers.py): HTTP, HTTPS with
// a fresh test CA, git smart HTTP; and a workspace holding that CA for clients inside.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness.h"

namespace corral::testing {

class EgressServers {
 public:
  // env_extra: "K=V" for the server process (CORRAL_TEST_LEASE_SECRET).
  explicit EgressServers(const std::vector<std::string>& env_extra = {});
  ~EgressServers();
  bool ok() const { return http > 0 && https > 0 && git > 0 && http_alias > 0; }
  std::string cafile() const { return dir_ / "ca.pem"; }
  // Requests the server answered, asked directly from the host (never through corral).
  int count(bool tls) const;
  // The headers of the last request the server answered ("Name: value" lines).
  std::string lastHeaders(bool tls) const;
  std::string httpUrl(const std::string& host = "127.0.0.1") const { return "http://" + host + ":" + std::to_string(http); }
  std::string httpsUrl() const { return "https://127.0.0.1:" + std::to_string(https); }
  std::string gitUrl() const { return "http://127.0.0.1:" + std::to_string(git); }
  // The HTTP server again, on another port: the same upstream under a second grant.
  std::string httpAliasUrl() const { return "http://127.0.0.1:" + std::to_string(http_alias); }

  int http = 0, https = 0, git = 0, http_alias = 0;

 private:
  std::string ask(bool tls, const std::string& path) const;
  TempDir dir_;
  std::optional<Process> proc_;
};

// A workspace holding the test CA, so clients inside can verify the HTTPS server.
struct EgressWorkspace {
  TempDir dir{"egress-ws"};
  explicit EgressWorkspace(const EgressServers& s) { dir.write("ca.pem", readHostFile(s.cafile())); }
};

std::vector<std::string> splitLines(const std::string& s);

#define REQUIRE_SERVERS(s)                                               \
  do {                                                                   \
    if (!(s).ok()) GTEST_FAIL() << "egress_servers.py did not start";   \
  } while (0)

}  // namespace corral::testing
