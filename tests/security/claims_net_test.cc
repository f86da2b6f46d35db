// SPDX-License-Identifier: Apache-2.0
// Claims net.loopback-only, net.no-raw-sockets and ns.ipc-uts-cgroup.
#include <sys/ipc.h>
#include <sys/msg.h>
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

TEST(NetLoopbackOnly, ControlLoopbackInsideWorks) {
  EXPECT_TRUE(probeDid(runProbe({}, {"loopback-selftest"}))) << "loopback inside is broken, so refusals prove nothing";
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
  if (!host.probe().ok()) GTEST_SKIP() << "host kernel cannot create it either: " << host.probe().raw;
  bool inet = std::string(c.family).rfind("inet", 0) == 0;
  std::vector<std::string> expected = inet ? std::vector<std::string>{} : std::vector<std::string>{"EAFNOSUPPORT"};
  EXPECT_TRUE(probeRefused(r, expected))
      << claim("net.no-raw-sockets", std::string(c.family) + "/" + c.type + " socket created inside");
}

INSTANTIATE_TEST_SUITE_P(, NetNoRawSockets,
                         ::testing::Values(SocketCase{"inet", "raw", "1", false}, SocketCase{"inet6", "raw", "58", false},
                                           SocketCase{"inet", "raw", "255", false}, SocketCase{"packet", "raw", "0", false},
                                           SocketCase{"packet", "dgram", "0", false}, SocketCase{"netlink", "raw", "0", false},
                                           SocketCase{"netlink", "dgram", "9", false}, SocketCase{"vsock", "stream", "0", false},
                                           SocketCase{"xdp", "raw", "0", false}, SocketCase{"key", "raw", "2", false},
                                           SocketCase{"alg", "seqpacket", "0", false},
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

TEST(NsIpcUtsCgroup, CgroupPathsAreRootedInside) {
  RunResult r = runProbe({}, {"read", "/proc/self/cgroup"});
  ASSERT_TRUE(probeDid(r));
  std::istringstream in(r.probe().get("data"));
  for (std::string line; std::getline(in, line);)
    EXPECT_TRUE(line.ends_with(":/")) << claim("ns.ipc-uts-cgroup", "host cgroup path visible: " + line);
}

}  // namespace
}  // namespace corral::testing
