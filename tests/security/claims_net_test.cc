// SPDX-License-Identifier: Apache-2.0
// Claims net.loopback-only, net.no-raw-sockets and ns.ipc-uts-cgroup.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>

#include "harness.h"

namespace corral::testing {
namespace {

// --- net.loopback-only ---

TEST(NetLoopbackOnly, OnlyTheLoopbackInterfaceExists) {
  RunResult r = runProbe({}, {"net-ifaces"});
  ASSERT_TRUE(probeDid(r));
  EXPECT_EQ(r.probe().list("ifaces"), std::vector<std::string>{"lo"}) << claim("net.loopback-only", "interfaces besides lo") << r.describe();
}

TEST(NetLoopbackOnly, ControlHostHasOtherInterfaces) {
  RunResult r = runHostProbe({"net-ifaces"});
  ASSERT_TRUE(probeDid(r));
  if (r.probe().list("ifaces").size() < 2) GTEST_SKIP() << "the host itself has only loopback";
}

TEST(NetLoopbackOnly, HostLoopbackListenersAreUnreachable) {
  for (const char* addr : {"127.0.0.1", "::1"}) {
    TcpListener host(addr);
    if (host.port() < 0) continue;  // no IPv6 loopback on this host
    std::string port = std::to_string(host.port());
    ASSERT_TRUE(probeDid(runHostProbe({"connect-tcp", addr, port}))) << "control: the host listener must accept on " << addr;
    RunResult r = runProbe({}, {"connect-tcp", addr, port});
    EXPECT_TRUE(probeRefused(r)) << claim("net.loopback-only", std::string("reached a host listener on ") + addr + " port " + port);
  }
}

TEST(NetLoopbackOnly, HostNonLoopbackAddressIsUnreachable) {
  std::string ip = hostIPv4NonLoopback();
  if (ip.empty()) GTEST_SKIP() << "the host has no non-loopback IPv4 address";
  TcpListener host("0.0.0.0");
  std::string port = std::to_string(host.port());
  ASSERT_TRUE(probeDid(runHostProbe({"connect-tcp", ip, port}))) << "control: the host listener must accept on " << ip;
  RunResult r = runProbe({}, {"connect-tcp", ip, port});
  EXPECT_TRUE(probeRefused(r)) << claim("net.loopback-only", "reached a host listener on " + ip + ":" + port);
}

TEST(NetLoopbackOnly, HostAbstractUnixSocketIsUnreachable) {
  AbstractListener host;
  ASSERT_TRUE(probeDid(runHostProbe({"connect-abstract", host.name()}))) << "control: the host socket must accept";
  RunResult r = runProbe({}, {"connect-abstract", host.name()});
  EXPECT_TRUE(probeRefused(r)) << claim("net.loopback-only", "reached host abstract socket @" + host.name());
}

// A socket handed in as stdio lives in the host's network namespace. The command tries to
// use fd 0 to reach a host listener: sendto on a UDP socket, and a TCP socket disconnected
// with connect(AF_UNSPEC) and connected again. Neither may get through: such sockets are
// relayed, so fd 0 inside is a pipe.
const char kStdioSocketEscape[] = R"PY(
import socket, sys
port, kind = int(sys.argv[1]), sys.argv[2]
try:
    if kind == "udp":
        s = socket.socket(fileno=0)
        s.sendto(b"escaped", ("127.0.0.1", port))
    else:
        s = socket.socket(fileno=0)
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        unspec = (ctypes.c_ushort * 8)()
        libc.connect(0, ctypes.byref(unspec), 16)
        s.connect(("127.0.0.1", port))
        s.sendall(b"escaped")
    print("sent")
except OSError as e:
    print("refused", e.errno)
)PY";

struct HostListener {
  int fd = -1;
  int port = 0;
  explicit HostListener(int type) {
    fd = ::socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || (type == SOCK_STREAM && ::listen(fd, 8) != 0) ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return;
    port = ntohs(a.sin_port);
  }
  ~HostListener() { ::close(fd); }
  // What reached the host listener: a datagram, or bytes on an accepted connection.
  std::string received(int type) const {
    char buf[64];
    if (type == SOCK_DGRAM) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    }
    int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return "";
    ::usleep(100'000);
    ssize_t n = ::recv(c, buf, sizeof buf, MSG_DONTWAIT);
    ::close(c);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "(connected)";
  }
};

// The socket handed in as stdin: UDP unconnected; TCP connected to a throwaway listener (as
// inetd or systemd Accept=yes would hand over an accepted connection).
int stdioSocket(int type, HostListener& decoy) {
  int s = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
  if (type == SOCK_STREAM) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(decoy.port));
    if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  }
  return s;
}

TEST(NetLoopbackOnly, ASocketHandedInAsStdioDoesNotReachTheHost) {
  for (int type : {SOCK_DGRAM, SOCK_STREAM}) {
    const char* kind = type == SOCK_DGRAM ? "udp" : "tcp";
    SCOPED_TRACE(kind);
    HostListener target(type), decoy(SOCK_STREAM);
    ASSERT_GT(target.port, 0);
    int s = stdioSocket(type, decoy);
    ASSERT_GE(s, 0);
    RunOptions o;
    o.stdin_fd = s;
    RunResult r = runCorral({}, {"python3", "-c", kStdioSocketEscape, std::to_string(target.port), kind}, o);
    ::close(s);
    EXPECT_EQ(target.received(type), "") << claim("net.loopback-only", std::string("a ") + kind + " socket on stdin reached a host listener") << r.describe();
  }
}

// Control: the same script run on the host with the same socket does get through.
TEST(NetLoopbackOnly, ControlASocketOnStdioReachesTheHostWithoutCorral) {
  for (int type : {SOCK_DGRAM, SOCK_STREAM}) {
    const char* kind = type == SOCK_DGRAM ? "udp" : "tcp";
    SCOPED_TRACE(kind);
    HostListener target(type), decoy(SOCK_STREAM);
    int s = stdioSocket(type, decoy);
    ASSERT_GE(s, 0);
    RunOptions o;
    o.stdin_fd = s;
    RunResult r = run({"/usr/bin/python3", "-c", kStdioSocketEscape, std::to_string(target.port), kind}, o);
    ::close(s);
    EXPECT_NE(target.received(type), "") << r.describe();
  }
}

// A host that cannot give the sandbox its own network namespace (here: a user namespace whose
// max_net_namespaces is 0, nested so that corral runs unprivileged inside it) gets one line
// naming the facility and 125, and the command never runs. The network namespace is made by a
// helper beside the mounts (src/sandbox/netns.h): its failure must still stop the launch.
RunResult runUnderNetnsCap(const std::string& cap, const char* kind = "net") {
  const std::string inner = "unshare -U --map-user=1000 --map-group=1000 \"$0\" exec -- /bin/echo RAN";
  const std::string cmd =
      cap.empty() ? inner : "echo " + cap + " > /proc/sys/user/max_" + kind + "_namespaces && " + inner;
  return run({"/usr/bin/unshare", "--user", "--map-root-user", "/bin/sh", "-c", cmd, corralBin()});
}

TEST(NetLoopbackOnly, WithoutNetworkNamespacesTheCommandNeverRuns) {
  RunResult r = runUnderNetnsCap("0");
  if (r.err.find("unshare failed") != std::string::npos) GTEST_SKIP() << "cannot nest user namespaces here";
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_EQ(r.out.find("RAN"), std::string::npos) << "the command ran without its network namespace";
  EXPECT_EQ(r.err, "corral: sandbox setup: join the network and IPC namespaces: No space left on device\n");
}

TEST(NetLoopbackOnly, ControlTheSameNestingRunsTheCommand) {
  RunResult r = runUnderNetnsCap("");
  if (r.err.find("unshare failed") != std::string::npos) GTEST_SKIP() << "cannot nest user namespaces here";
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "RAN\n");
}

// The helper that makes the network namespace dies before it reports (strace kills it at its
// unshare(2); in life: the OOM killer, a crash, a same-uid process). Init must fail the launch
// at once with one line and 125, never run the command, and never hang: the helper shares
// init's fd table, so the report pipe's write end stays open and cannot signal its death.
TEST(NetLoopbackOnly, ANetworkHelperKilledBeforeItReportsFailsTheLaunch) {
  if (::access("/usr/bin/strace", X_OK) != 0) GTEST_SKIP() << "no strace (scripts/bootstrap.sh installs it)";
  RunOptions o;
  o.deadline = std::chrono::milliseconds(20'000);
  // Under the sanitizer build: LeakSanitizer cannot run under ptrace and would add its own
  // complaint to stderr at exit (the ASan checks themselves still run).
  o.env_extra = {"ASAN_OPTIONS=detect_leaks=0"};
  RunResult r = run({"/usr/bin/strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=unshare", "-e",
                     "inject=unshare:signal=SIGKILL:when=1", corralBin(), "exec", "--", "/bin/echo", "RAN"}, o);
  if (r.err.find("PTRACE") != std::string::npos) GTEST_SKIP() << "ptrace is not allowed here: " << r.err;
  EXPECT_FALSE(r.deadline_hit) << "corral hung after its network helper died";
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_EQ(r.out.find("RAN"), std::string::npos);
  EXPECT_EQ(r.err, "corral: sandbox setup: join the network and IPC namespaces: No child processes\n");
}

TEST(NetLoopbackOnly, ControlLoopbackInsideWorks) {
  EXPECT_TRUE(probeDid(runProbe({}, {"loopback-selftest"}))) << "loopback inside is broken, so refusals prove nothing";
}

// getifaddrs() asks NETLINK_ROUTE, which the filter lets through: it sees lo alone.
TEST(NetLoopbackOnly, GetifaddrsSeesOnlyLoopback) {
  RunResult r = runProbe({}, {"getifaddrs"});
  ASSERT_TRUE(probeDid(r)) << "getifaddrs fails inside" << r.describe();
  EXPECT_EQ(r.probe().list("ifaces"), std::vector<std::string>{"lo"}) << claim("net.loopback-only", "getifaddrs lists more than lo")
                                                                      << r.describe();
}

TEST(NetLoopbackOnly, ControlGetifaddrsOnTheHostListsMore) {
  RunResult r = runHostProbe({"getifaddrs"});
  ASSERT_TRUE(probeDid(r)) << r.describe();
  if (r.probe().list("ifaces").size() < 2) GTEST_SKIP() << "the host itself has only loopback";
}

// A change through NETLINK_ROUTE (RTM_NEWLINK) needs CAP_NET_ADMIN over the namespace, which
// the command lacks: EPERM, from the kernel.
TEST(NetLoopbackOnly, NetlinkRouteChangesAreRefused) {
  RunResult r = runProbe({}, {"netlink-change"});
  EXPECT_TRUE(probeRefused(r, {"EPERM"})) << claim("net.loopback-only", "a netlink change to an interface went through")
                                          << r.describe();
}

// Control: root of a user and network namespace of its own makes the same change.
TEST(NetLoopbackOnly, ControlNetlinkChangeWorksWithCapNetAdmin) {
  RunResult r = runHostProbe({"as-userns-root", "netlink-change"});
  if (r.probe().err == "EPERM" && r.probe().raw.find("stage=unshare") != std::string::npos)
    GTEST_SKIP() << "cannot make a user namespace here";
  EXPECT_TRUE(probeDid(r)) << r.describe();
}

// --- net.no-raw-sockets ---

struct SocketCase {
  const char* family;
  const char* type;
  const char* proto;
  bool allowed;  // the positive controls: ordinary sockets still work inside
};

void PrintTo(const SocketCase& c, std::ostream* os) { *os << c.family << "/" << c.type << "/" << c.proto; }

class NetNoRawSockets : public ::testing::TestWithParam<SocketCase> {};

TEST_P(NetNoRawSockets, SocketVerdictInside) {
  const SocketCase& c = GetParam();
  std::vector<std::string> args{"socket", c.family, c.type, c.proto};
  RunResult r = runProbe({}, args);
  if (c.allowed) {
    EXPECT_TRUE(probeDid(r)) << "ordinary " << c.family << " sockets must still work";
    return;
  }
  // The control first: a socket the host kernel cannot make proves nothing when refused.
  std::vector<std::string> control{"as-userns-root"};
  control.insert(control.end(), args.begin(), args.end());
  RunResult host = runHostProbe(control);
  // Netlink is the exception: the kernel answers a protocol it lacks with EPROTONOSUPPORT and
  // never says EAFNOSUPPORT for its built-in netlink family, so the filter's answer is told
  // apart even where the host cannot make the socket.
  const bool netlink = std::string(c.family) == "netlink";
  if (!host.probe().ok() && !netlink) GTEST_SKIP() << "host kernel cannot create it either: " << host.probe().raw;
  bool inet = std::string(c.family).rfind("inet", 0) == 0;
  std::vector<std::string> expected = inet ? std::vector<std::string>{} : std::vector<std::string>{"EAFNOSUPPORT"};
  EXPECT_TRUE(probeRefused(r, expected))
      << claim("net.no-raw-sockets", std::string(c.family) + "/" + c.type + " socket created inside");
}

INSTANTIATE_TEST_SUITE_P(, NetNoRawSockets,
                         ::testing::Values(SocketCase{"inet", "raw", "1", false}, SocketCase{"inet6", "raw", "58", false},
                                           SocketCase{"inet", "raw", "255", false}, SocketCase{"packet", "raw", "0", false},
                                           SocketCase{"packet", "dgram", "0", false},
                                           // Every netlink protocol but NETLINK_ROUTE (0), one test each:
                                           // usersock, firewall, sock_diag, nflog, xfrm, selinux, iscsi,
                                           // audit, fib_lookup, connector, netfilter, ip6_fw, dnrtmsg,
                                           // kobject_uevent, generic, scsitransport, ecryptfs, rdma,
                                           // crypto, smc. A protocol this kernel lacks skips.
                                           SocketCase{"netlink", "raw", "1", false}, SocketCase{"netlink", "raw", "2", false},
                                           SocketCase{"netlink", "raw", "3", false}, SocketCase{"netlink", "raw", "4", false},
                                           SocketCase{"netlink", "raw", "5", false}, SocketCase{"netlink", "raw", "6", false},
                                           SocketCase{"netlink", "raw", "7", false}, SocketCase{"netlink", "raw", "8", false},
                                           SocketCase{"netlink", "dgram", "9", false}, SocketCase{"netlink", "raw", "10", false},
                                           SocketCase{"netlink", "dgram", "11", false}, SocketCase{"netlink", "raw", "12", false},
                                           SocketCase{"netlink", "raw", "13", false}, SocketCase{"netlink", "raw", "14", false},
                                           SocketCase{"netlink", "dgram", "15", false}, SocketCase{"netlink", "dgram", "16", false},
                                           SocketCase{"netlink", "raw", "17", false}, SocketCase{"netlink", "raw", "18", false},
                                           SocketCase{"netlink", "raw", "19", false}, SocketCase{"netlink", "raw", "20", false},
                                           SocketCase{"netlink", "raw", "21", false}, SocketCase{"netlink", "raw", "22", false},
                                           SocketCase{"netlink", "raw", "0", true}, SocketCase{"netlink", "dgram", "0", true},
                                           SocketCase{"vsock", "stream", "0", false},
                                           SocketCase{"xdp", "raw", "0", false}, SocketCase{"key", "raw", "2", false},
                                           SocketCase{"alg", "seqpacket", "0", false},
                                           // red team, session 13: IP protocols beyond TCP/UDP/ping
                                           SocketCase{"inet", "stream", "262", false}, SocketCase{"inet6", "dgram", "136", false},
                                           SocketCase{"inet", "seqpacket", "0", false},
                                           SocketCase{"unix", "stream", "0", true}, SocketCase{"inet", "stream", "0", true},
                                           SocketCase{"inet6", "dgram", "0", true}),
                         [](const auto& info) {
                           return std::string(info.param.family) + "_" + info.param.type + "_" + info.param.proto;
                         });

// --- ns.ipc-uts-cgroup ---

TEST(NsIpcUtsCgroup, NamespacesDifferFromTheHost) {
  RunResult inside = runProbe({}, {"ns-ids"});
  RunResult host = runHostProbe({"ns-ids"});
  ASSERT_TRUE(probeDid(inside));
  ASSERT_TRUE(probeDid(host));
  for (const char* ns : {"ipc", "uts", "cgroup", "net", "mnt", "pid", "user"}) {
    EXPECT_NE(inside.probe().get(ns), host.probe().get(ns))
        << claim("ns.ipc-uts-cgroup", std::string("the sandbox shares the host's ") + ns + " namespace") << inside.describe();
  }
}

TEST(NsIpcUtsCgroup, ControlTwoHostProcessesShareNamespaces) {
  RunResult a = runHostProbe({"ns-ids"}), b = runHostProbe({"ns-ids"});
  ASSERT_TRUE(probeDid(a));
  EXPECT_EQ(a.probe().raw, b.probe().raw) << "namespace ids are not stable, so comparing them proves nothing";
}

TEST(NsIpcUtsCgroup, HostnameIsCorral) {
  RunResult r = runProbe({}, {"ids"});
  ASSERT_TRUE(probeDid(r));
  EXPECT_EQ(r.probe().get("hostname"), "corral") << claim("ns.ipc-uts-cgroup", "hostname is not corral") << r.describe();
  RunResult host = runHostProbe({"ids"});
  if (host.probe().get("hostname") == "corral") GTEST_SKIP() << "the host is itself named corral: no control";
}

TEST(NsIpcUtsCgroup, HostSysvMessageQueueIsInvisible) {
  std::mt19937 rng{std::random_device{}()};
  key_t key = static_cast<key_t>(0x10000000 + (rng() & 0x0fffffff));
  int id = msgget(key, IPC_CREAT | IPC_EXCL | 0666);
  ASSERT_GE(id, 0) << "cannot create a host SysV queue";
  RunResult host = runHostProbe({"ipc-get", std::to_string(key)});
  RunResult inside = runProbe({}, {"ipc-get", std::to_string(key)});
  msgctl(id, IPC_RMID, nullptr);
  EXPECT_TRUE(probeDid(host)) << "control: the host must see its own queue";
  EXPECT_TRUE(probeRefused(inside)) << claim("ns.ipc-uts-cgroup", "host SysV queue visible inside");
}

// The IPC namespace is made by the same helper as the network one (src/sandbox/netns.h): a
// host that cannot give the sandbox its own gets one line and 125, and the command never runs
// in the caller's. The control is NetLoopbackOnly.ControlTheSameNestingRunsTheCommand.
TEST(NsIpcUtsCgroup, WithoutIpcNamespacesTheCommandNeverRuns) {
  RunResult r = runUnderNetnsCap("0", "ipc");
  if (r.err.find("unshare failed") != std::string::npos) GTEST_SKIP() << "cannot nest user namespaces here";
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_EQ(r.out.find("RAN"), std::string::npos) << claim("ns.ipc-uts-cgroup", "the command ran without its IPC namespace");
  EXPECT_EQ(r.err, "corral: sandbox setup: join the network and IPC namespaces: No space left on device\n");
}

TEST(NsIpcUtsCgroup, CgroupPathsAreRootedInside) {
  RunResult r = runProbe({}, {"read", "/proc/self/cgroup"});
  ASSERT_TRUE(probeDid(r));
  std::istringstream in(r.probe().get("data"));
  for (std::string line; std::getline(in, line);)
    EXPECT_TRUE(line.ends_with(":/")) << claim("ns.ipc-uts-cgroup", "host cgroup path visible: " + line);
}

}  // namespace
}  // namespace corral::testing
