// SPDX-License-Identifier: Apache-2.0
// Claim egress.tcp-grants-socks5 (claims/egress.toml): tcp://host:port grants open any TCP
// protocol through the proxy's SOCKS5 (and CONNECT) tunnels, under the same policy as HTTP.
// Real clients inside `corral exec --net proxy` (curl --socks5-hostname, ssh through
// `nc -X 5`, git clone ssh://, psql) against real servers (tests/security/tcp_servers.py:
// sshd, PostgreSQL, HTTP, UDP) on an internal address of the test's own network namespace,
// reached by names only the host resolves (its private /etc/hosts). Each refusal is checked
// at the server too.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tcp_servers_fixture.h"

namespace corral::testing {
namespace {

constexpr char kClaim[] = "egress.tcp-grants-socks5";

class EgressTcpGrantsSocks5 : public TcpServersFixture {};

TEST_F(EgressTcpGrantsSocks5, CurlSocks5HostnameReachesATcpGrantByANameOnlyTheHostResolves) {
  ASSERT_TRUE(started({"http"}));
  const std::string url = "http://web.corp.test:" + port("http");
  RunResult r = run({grant("web.corp.test", "http")},
                    "echo \"$ALL_PROXY\"; getent hosts web.corp.test || echo unresolved-inside; "
                    "curl -sS --max-time 30 --socks5-hostname 127.0.0.1:3128 " + url + "/via-socks; echo; "
                    "curl -sS --max-time 30 -x \"$ALL_PROXY\" " + url + "/via-all-proxy; echo; "
                    "curl -sS --max-time 30 -p -x http://127.0.0.1:3128 " + url + "/via-connect; echo");
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out,
            "socks5h://127.0.0.1:3128\nunresolved-inside\ntcp ok /via-socks\ntcp ok /via-all-proxy\ntcp ok /via-connect\n")
      << r.describe();
  const auto ev = events(r);
  ASSERT_EQ(ev.size(), 3u) << r.describe();
  expectSocksTunnel(ev[0], "web.corp.test", "http");
  expectSocksTunnel(ev[1], "web.corp.test", "http");
  // An HTTP CONNECT opens the same tcp grant, with no TLS asked of it.
  EXPECT_EQ(ev[2]["kind"], "connect");
  EXPECT_EQ(ev[2]["decision"], "allow") << ev[2].dump();
}

TEST_F(EgressTcpGrantsSocks5, SshThroughNcSocks5ReachesTheSshd) {
  ASSERT_TRUE(started({"ssh"}));
  RunResult r = run({grant("git.corp.test", "ssh")},
                    sshCommand() + " " + ports_["user"].get<std::string>() + "@git.corp.test 'echo ssh-ok $((6*7))'");
  ASSERT_EQ(r.exit_code, 0) << r.describe() << dir_->read("sshd.log");
  EXPECT_EQ(r.out, "ssh-ok 42\n") << r.describe();
  const auto ev = events(r);
  ASSERT_EQ(ev.size(), 1u) << r.describe();
  expectSocksTunnel(ev[0], "git.corp.test", "ssh");
}

TEST_F(EgressTcpGrantsSocks5, GitCloneOverSshThroughSocks5) {
  ASSERT_TRUE(started({"ssh"}));
  const std::string url = "ssh://" + ports_["user"].get<std::string>() + "@git.corp.test:" + port("ssh") +
                          ports_["repo"].get<std::string>();
  RunResult r = run({grant("git.corp.test", "ssh")},
                    "GIT_SSH_COMMAND=\"" + sshCommand() + "\" git clone -q " + url + " /tmp/clone && cat /tmp/clone/README");
  ASSERT_EQ(r.exit_code, 0) << r.describe() << dir_->read("sshd.log");
  EXPECT_EQ(r.out, "cloned over ssh through corral\n") << r.describe();
  const auto ev = events(r);
  ASSERT_EQ(ev.size(), 1u) << r.describe();
  expectSocksTunnel(ev[0], "git.corp.test", "ssh");
}

// libpq has no proxy support: the usual way is a local relay, here netcat's, whose outward
// side is `nc -X 5`. The relay waits in listen; psql starts once /proc/net/tcp shows it
// listening (port 5433 is 0x1539), so no connection is spent on a readiness probe.
TEST_F(EgressTcpGrantsSocks5, PsqlThroughANetcatSocks5Relay) {
  ASSERT_TRUE(started({"pg"}));
  RunResult r = run({grant("db.corp.test", "pg")},
                    "mkfifo /tmp/f; nc -l 127.0.0.1 5433 </tmp/f | nc -X 5 -x 127.0.0.1:3128 db.corp.test " + port("pg") +
                        " >/tmp/f & until grep -q ':1539 00000000:0000 0A' /proc/net/tcp; do :; done; "
                        "psql -X -h 127.0.0.1 -p 5433 -U corral -d postgres -Atc \"select 'pg-ok', 6*7\"");
  ASSERT_EQ(r.exit_code, 0) << r.describe() << dir_->read("pg.log");
  EXPECT_EQ(r.out, "pg-ok|42\n") << r.describe();
  const auto ev = events(r);
  ASSERT_EQ(ev.size(), 1u) << r.describe();
  expectSocksTunnel(ev[0], "db.corp.test", "pg");
}

TEST_F(EgressTcpGrantsSocks5, AnUngrantedPortAndAPrivateRangeAreRefusedBeforeAnyDial) {
  ASSERT_TRUE(started({"http"}));
  const std::string socks = "curl -sS --max-time 30 --socks5-hostname 127.0.0.1:3128 ";
  // The sshd's port under a grant of the web server's port.
  RunResult wrong_port = run({grant("web.corp.test", "http")}, socks + "http://web.corp.test:" + port("ssh") + "/; echo rc=$?");
  EXPECT_NE(wrong_port.out.find("rc=97"), std::string::npos) << "curl: the SOCKS5 connect was refused: " << wrong_port.describe();
  auto ev = events(wrong_port);
  ASSERT_EQ(ev.size(), 1u) << wrong_port.describe();
  EXPECT_EQ(ev[0]["rule"], "port-mismatch") << claim(kClaim, "an ungranted port was opened") << ev[0].dump();
  EXPECT_EQ(ev[0]["resolved"], "") << "nothing may be dialled: " << ev[0].dump();
  // The granted name without its CIDR: the private address refuses it.
  RunResult priv = run({grant("web.corp.test", "http")}, socks + "http://web.corp.test:" + port("http") + "/; echo rc=$?", false);
  EXPECT_EQ(priv.out.find("tcp ok"), std::string::npos) << claim(kClaim, "a private address was reached") << priv.describe();
  ev = events(priv);
  ASSERT_EQ(ev.size(), 1u) << priv.describe();
  EXPECT_EQ(ev[0]["rule"], "private-address") << ev[0].dump();
  EXPECT_EQ(ev[0]["resolved"], "") << ev[0].dump();
  // An https grant for the same host and port does not open plain TCP: the SNI rule holds.
  RunResult tls = run({"https://web.corp.test:" + port("http")}, socks + "http://web.corp.test:" + port("http") + "/; echo rc=$?");
  EXPECT_EQ(tls.out.find("tcp ok"), std::string::npos) << claim(kClaim, "an https grant carried plain TCP") << tls.describe();
}

// UDP has no grant: the SOCKS5 UDP ASSOCIATE (and BIND) is refused with "command not
// supported", and a datagram sent straight at the server has no route out of the sandbox.
// The control: the same datagram from the test process reaches the server's record.
TEST_F(EgressTcpGrantsSocks5, UdpAttemptsAreRefusedAndReachNothing) {
  ASSERT_TRUE(started({"http", "udp"}));
  const std::string script = R"PY(
import socket, sys
for cmd in (3, 2):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(bytes([5, 1, 0]))
    assert s.recv(2) == bytes([5, 0])
    s.sendall(bytes([5, cmd, 0, 1, 0, 0, 0, 0, 0, 0]))
    r = s.recv(10)
    print("cmd", cmd, "rep", r[1] if len(r) > 1 else "none")
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"corral-udp-sentinel", ("10.77.0.1", int(sys.argv[1])))
    print("udp sent")
except OSError as e:
    print("udp refused", e.errno)
)PY";
  RunResult r = run({grant("web.corp.test", "http")}, "python3 -c '" + script + "' " + port("udp"));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("cmd 3 rep 7\n"), std::string::npos) << claim(kClaim, "UDP ASSOCIATE was not refused") << r.describe();
  EXPECT_NE(r.out.find("cmd 2 rep 7\n"), std::string::npos) << claim(kClaim, "BIND was not refused") << r.describe();
  EXPECT_NE(r.out.find("udp refused"), std::string::npos) << claim(kClaim, "a datagram left the sandbox") << r.describe();
  const auto ev = events(r);
  ASSERT_EQ(ev.size(), 2u) << r.describe();
  EXPECT_EQ(ev[0]["method"], "UDP-ASSOCIATE");
  EXPECT_EQ(ev[0]["rule"], "socks-command-unsupported");
  EXPECT_EQ(ev[1]["method"], "BIND");
  EXPECT_EQ(dir_->read("udp"), "") << claim(kClaim, "the UDP server received a datagram from the sandbox");
  // The control: the server records a datagram that does get to it.
  const int u = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(u, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(ports_["udp"].get<int>()));
  ::inet_pton(AF_INET, kAddress, &to.sin_addr);
  ASSERT_EQ(::sendto(u, "control", 7, 0, reinterpret_cast<sockaddr*>(&to), sizeof to), 7);
  ::close(u);
  for (int i = 0; i < 2000 && dir_->read("udp").empty(); ++i) ::usleep(1000);
  EXPECT_EQ(dir_->read("udp"), std::string(kAddress) + " 7\n") << "the control datagram was not recorded";
}

}  // namespace
}  // namespace corral::testing
