// SPDX-License-Identifier: Apache-2.0
// Tests of the seccomp allowlist as data: what the policy says, before any BPF exists.
#include "policy/seccomp_policy.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>

#include <cerrno>
#include <set>
#include <string>

namespace corral::policy::seccomp {

// gtest prints verdicts through this (found by ADL on Verdict's namespace).
void PrintTo(const Verdict& v, std::ostream* os) {
  *os << (v.action == Action::kAllow ? "allow" : "errno " + std::to_string(v.err));
}

namespace {

using Op = ArgCond::Op;
using U = uint64_t;

const Policy& policy() {
  static const Policy p = sandboxPolicy();
  return p;
}

Verdict call(std::string_view name, SyscallArgs args = {}) {
  return evaluate(policy(), name, args);
}

constexpr Verdict kAllowed{Action::kAllow, 0};
Verdict refused(int err) { return {Action::kErrno, err}; }

TEST(SeccompPolicyData, SandboxPolicyIsValid) {
  auto r = validate(policy());
  EXPECT_TRUE(r.ok()) << r.error().message();
}

TEST(SeccompPolicyData, UnlistedSyscallsGetEnosysSoGlibcFallsBack) {
  EXPECT_EQ(policy().default_errno, ENOSYS);
  EXPECT_EQ(call("no_such_syscall"), refused(ENOSYS));
  EXPECT_EQ(call("lsm_get_self_attr"), refused(ENOSYS));  // newer than the policy: not listed
}

TEST(SeccompPolicyData, EveryRuleHasAReason) {
  for (const Rule& r : policy().rules) EXPECT_FALSE(r.reason.empty()) << r.syscall;
}

// Each must fail with ENOSYS, whatever its arguments.
constexpr std::string_view kDangerous[] = {"mount",
                                           "umount2",
                                           "pivot_root",
                                           "chroot",
                                           "setns",
                                           "keyctl",
                                           "add_key",
                                           "request_key",
                                           "bpf",
                                           "perf_event_open",
                                           "userfaultfd",
                                           "io_uring_setup",
                                           "io_uring_enter",
                                           "io_uring_register",
                                           "kexec_load",
                                           "kexec_file_load",
                                           "init_module",
                                           "finit_module",
                                           "delete_module",
                                           "open_by_handle_at",
                                           "name_to_handle_at",
                                           "ptrace",
                                           "process_vm_readv",
                                           "process_vm_writev",
                                           "iopl",
                                           "ioperm",
                                           "swapon",
                                           "swapoff",
                                           "reboot",
                                           "acct",
                                           "quotactl",
                                           "settimeofday",
                                           "clock_settime",
                                           "adjtimex",
                                           "clock_adjtime",
                                           "syslog",
                                           "lookup_dcookie",
                                           "fsopen",
                                           "fsconfig",
                                           "fsmount",
                                           "fspick",
                                           "open_tree",
                                           "move_mount",
                                           "mount_setattr",
                                           "vhangup",
                                           "nfsservctl",
                                           "uselib",
                                           "pidfd_getfd",
                                           "kcmp",
                                           "clone3",
                                           "modify_ldt"};

TEST(SeccompPolicyData, DangerousSyscallsAreNeverAllowed) {
  for (std::string_view name : kDangerous) {
    for (const Rule& r : policy().rules)
      EXPECT_FALSE(r.syscall == name && r.action == Action::kAllow) << name << " has an allow rule";
    for (uint64_t a : {uint64_t{0}, uint64_t{1}, ~uint64_t{0}})
      EXPECT_EQ(call(name, {a, a, a, a, a, a}), refused(ENOSYS)) << name;
  }
}

TEST(SeccompPolicyData, EverydaySyscallsAreAllowed) {
  for (auto name : {"read",         "write",       "openat",    "close",      "execve",
                    "mmap",         "mprotect",    "futex",     "rseq",       "wait4",
                    "pipe2",        "epoll_pwait", "getrandom", "statx",      "getdents64",
                    "rt_sigaction", "prlimit64",   "ioctl",     "arch_prctl", "set_robust_list"})
    EXPECT_EQ(call(name), kAllowed) << name;
}

TEST(SeccompPolicyData, CloneWithAnyNamespaceFlagGetsEperm) {
  const uint64_t thread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                          CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
  for (uint64_t flag : {CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC,
                        CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME}) {
    EXPECT_EQ(call("clone", {flag | SIGCHLD}), refused(EPERM)) << std::hex << flag;
    EXPECT_EQ(call("clone", {flag | thread}), refused(EPERM)) << std::hex << flag;
    EXPECT_EQ(call("unshare", {flag}), refused(ENOSYS)) << std::hex << flag;
    EXPECT_EQ(call("unshare", {flag | CLONE_FILES}), refused(ENOSYS)) << std::hex << flag;
  }
}

TEST(SeccompPolicyData, PlainForkThreadsAndUnshareAreAllowed) {
  EXPECT_EQ(call("clone", {SIGCHLD}), kAllowed);
  EXPECT_EQ(call("clone", {CLONE_VM | CLONE_VFORK | SIGCHLD}), kAllowed);
  EXPECT_EQ(
      call("clone", {CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                     CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID}),
      kAllowed);
  EXPECT_EQ(call("unshare", {CLONE_FILES | CLONE_FS}), kAllowed);
  EXPECT_EQ(call("fork"), kAllowed);
  EXPECT_EQ(call("vfork"), kAllowed);
  EXPECT_EQ(call("clone3"), refused(ENOSYS));
}

TEST(SeccompPolicyData, SocketFamiliesOtherThanUnixInetInet6GetEafnosupport) {
  for (uint64_t fam : {AF_UNIX, AF_INET, AF_INET6})
    for (U type : {U{SOCK_STREAM}, U{SOCK_DGRAM}, U{SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC}})
      EXPECT_EQ(call("socket", {fam, type}), kAllowed) << fam << "/" << type;
  EXPECT_EQ(call("socket", {AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC}), kAllowed);
  for (uint64_t fam = 0; fam < 64; ++fam) {
    if (fam == AF_UNIX || fam == AF_INET || fam == AF_INET6 || fam == AF_NETLINK) continue;
    EXPECT_EQ(call("socket", {fam, SOCK_DGRAM}), refused(EAFNOSUPPORT)) << "family " << fam;
  }
  // The kernel reads an int: garbage in the high half must not smuggle AF_NETLINK through.
  EXPECT_EQ(call("socket", {(uint64_t{1} << 32) | AF_NETLINK, SOCK_DGRAM}), refused(EAFNOSUPPORT));
  EXPECT_EQ(call("socket", {(uint64_t{1} << 32) | AF_NETLINK, SOCK_RAW, 0}), refused(EAFNOSUPPORT));
  EXPECT_EQ(call("socket", {~uint64_t{0}, SOCK_DGRAM}), refused(EAFNOSUPPORT));
}

// NETLINK_ROUTE (0) alone; protocols 1..31 and anything with high bits set are refused.
TEST(SeccompPolicyData, NetlinkIsRouteOnly) {
  for (U type : {U{SOCK_RAW}, U{SOCK_DGRAM}, U{SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK}})
    EXPECT_EQ(call("socket", {AF_NETLINK, type, 0}), kAllowed) << type;
  for (U proto = 1; proto < 32; ++proto)
    EXPECT_EQ(call("socket", {AF_NETLINK, SOCK_RAW, proto}), refused(EAFNOSUPPORT)) << proto;
  for (U proto : {U{1} << 32, ~U{0}, U{1} << 63})
    EXPECT_EQ(call("socket", {AF_NETLINK, SOCK_DGRAM, proto}), refused(EAFNOSUPPORT)) << proto;
}

TEST(SeccompPolicyData, RawAndPacketSocketTypesGetEsocktnosupport) {
  for (U fam : {AF_UNIX, AF_INET, AF_INET6})
    for (U type : {SOCK_RAW, SOCK_PACKET})
      for (U flags : {U{0}, U{SOCK_NONBLOCK}, U{SOCK_CLOEXEC}, U{SOCK_NONBLOCK | SOCK_CLOEXEC}})
        EXPECT_EQ(call("socket", {fam, type | flags}), refused(ESOCKTNOSUPPORT))
            << fam << "/" << type << "/" << flags;
}

// AF_INET/AF_INET6: TCP, UDP and ping; SEQPACKET (SCTP), RDM and DCCP types, and every
// protocol above ICMPv6 (MPTCP, SMC, UDP-Lite, SCTP, L2TP), are refused.
TEST(SeccompPolicyData, InetSocketsAreTcpUdpOrPingOnly) {
  for (U fam : {AF_INET, AF_INET6}) {
    for (U proto : {U{0}, U{IPPROTO_TCP}}) EXPECT_EQ(call("socket", {fam, SOCK_STREAM, proto}), kAllowed) << proto;
    for (U proto : {U{0}, U{IPPROTO_UDP}, U{IPPROTO_ICMP}, U{IPPROTO_ICMPV6}})
      EXPECT_EQ(call("socket", {fam, SOCK_DGRAM | SOCK_CLOEXEC, proto}), kAllowed) << proto;
    for (U proto : {U{262}, U{256}, U{136}, U{132}, U{115}, U{59}, (U{1} << 32) | IPPROTO_TCP, ~U{0}})
      for (U type : {U{SOCK_STREAM}, U{SOCK_DGRAM | SOCK_NONBLOCK}})
        EXPECT_EQ(call("socket", {fam, type, proto}), refused(EPROTONOSUPPORT)) << fam << "/" << type << "/" << proto;
    for (U type : {U{SOCK_SEQPACKET}, U{SOCK_RDM}, U{SOCK_DCCP | SOCK_CLOEXEC}})
      EXPECT_EQ(call("socket", {fam, type, 0}), refused(ESOCKTNOSUPPORT)) << fam << "/" << type;
  }
  EXPECT_EQ(call("setsockopt", {3, IPPROTO_TCP, TCP_ULP}), refused(EPERM));
  EXPECT_EQ(call("setsockopt", {3, (U{1} << 32) | IPPROTO_TCP, (U{7} << 32) | TCP_ULP}), refused(EPERM));
  EXPECT_EQ(call("setsockopt", {3, IPPROTO_TCP, TCP_NODELAY}), kAllowed);
  EXPECT_EQ(call("setsockopt", {3, SOL_SOCKET, TCP_ULP}), kAllowed) << "SO_* 31 is not TCP_ULP";
  EXPECT_EQ(call("fcntl", {3, F_SETPIPE_SZ, 4096}), kAllowed) << "no host pipe is handed over (stdio_relay.h)";
  EXPECT_EQ(call("fcntl", {3, F_GETPIPE_SZ}), kAllowed);
  EXPECT_EQ(call("fcntl", {3, F_SETFL, 0}), kAllowed);
}

TEST(SeccompPolicyData, SocketpairIsUnixOnly) {
  EXPECT_EQ(call("socketpair", {AF_UNIX, SOCK_STREAM}), kAllowed);
  for (uint64_t fam : {uint64_t{AF_UNSPEC}, uint64_t{AF_INET}, uint64_t{AF_INET6},
                       uint64_t{AF_NETLINK}, (uint64_t{1} << 32) | AF_UNIX})
    EXPECT_EQ(call("socketpair", {fam, SOCK_STREAM}), refused(EAFNOSUPPORT)) << fam;
}

TEST(SeccompPolicyData, TerminalInjectionIoctlsGetEpermOnTheLow32Bits) {
  for (uint64_t cmd : {uint64_t{TIOCSTI}, uint64_t{TIOCLINUX}})
    for (uint64_t high : {uint64_t{0}, uint64_t{1} << 32, 0xffffffff00000000u})
      EXPECT_EQ(call("ioctl", {0, cmd | high}), refused(EPERM)) << std::hex << (cmd | high);
  for (uint64_t cmd : {uint64_t{TCGETS}, uint64_t{TIOCGWINSZ}, uint64_t{FIONREAD},
                       uint64_t{TIOCSTI} + 1, uint64_t{TIOCSTI} << 32})
    EXPECT_EQ(call("ioctl", {0, cmd}), kAllowed) << std::hex << cmd;
}

TEST(SeccompPolicyData, PersonalityAllowsOnlyLinuxQueryAndLinux32) {
  for (uint64_t p :
       {uint64_t{PER_LINUX}, uint64_t{PER_LINUX32}, uint64_t{0xffffffff}, 0xffffffffffffffffu})
    EXPECT_EQ(call("personality", {p}), kAllowed) << std::hex << p;
  for (uint64_t p :
       {uint64_t{ADDR_NO_RANDOMIZE}, uint64_t{READ_IMPLIES_EXEC},
        U{PER_LINUX32} | ADDR_NO_RANDOMIZE, uint64_t{UNAME26}, uint64_t{ADDR_COMPAT_LAYOUT},
        uint64_t{MMAP_PAGE_ZERO}, U{PER_LINUX32} | READ_IMPLIES_EXEC, uint64_t{PER_BSD}})
    EXPECT_EQ(call("personality", {p}), refused(ENOSYS)) << std::hex << p;
}

bool allHold(const std::vector<ArgCond>& conds, const SyscallArgs& args) {
  for (const ArgCond& c : conds)
    if (!condHolds(c, args)) return false;
  return true;
}

// The BPF may test refusals in any order, so two that can match one call must agree.
TEST(SeccompPolicyData, OverlappingRefusalsAgreeOnTheErrno) {
  std::set<std::string_view> refined;
  std::set<uint64_t> probes{0, 1, ~uint64_t{0}};
  for (const Rule& r : policy().rules) {
    if (r.action != Action::kErrno || r.conds.empty()) continue;
    refined.insert(r.syscall);
    for (const ArgCond& c : r.conds)
      for (U v : {c.value, c.value + 1, c.value - 1, c.value | c.mask, c.value | (U{1} << 32)})
        probes.insert(v);
  }
  for (std::string_view name : refined)
    for (uint64_t a0 : probes)
      for (uint64_t a1 : probes) {
        std::set<int> errs;
        for (const Rule& r : policy().rules)
          if (r.syscall == name && r.action == Action::kErrno && !r.conds.empty() &&
              allHold(r.conds, {a0, a1}))
            errs.insert(r.err);
        EXPECT_LE(errs.size(), 1u) << name << "(" << a0 << ", " << a1 << ")";
      }
}

struct BadPolicy {
  const char* why;
  std::vector<Rule> rules;
};

TEST(SeccompPolicyData, ValidateRejectsMalformedPolicies) {
  const ArgCond a1 = {1, Op::kEq, 5};
  const BadPolicy cases[] = {
      {"refusal without an allow", {{"ioctl", Action::kErrno, EPERM, {a1}, "r"}}},
      {"duplicate allow",
       {{"read", Action::kAllow, 0, {}, "r"}, {"read", Action::kAllow, 0, {}, "r"}}},
      {"allow and denial",
       {{"read", Action::kAllow, 0, {}, "r"}, {"read", Action::kErrno, EPERM, {}, "r"}}},
      {"conditional allow plus refusal",
       {{"read", Action::kAllow, 0, {a1}, "r"}, {"read", Action::kErrno, EPERM, {a1}, "r"}}},
      {"two conds on one arg", {{"read", Action::kAllow, 0, {a1, {1, Op::kGt, 2}}, "r"}}},
      {"arg out of range", {{"read", Action::kAllow, 0, {{6, Op::kEq, 0}}, "r"}}},
      {"no reason", {{"read", Action::kAllow, 0, {}, ""}}},
      {"errno zero", {{"read", Action::kErrno, 0, {}, "r"}}},
      {"mask on eq", {{"read", Action::kAllow, 0, {{1, Op::kEq, 0, 0xff}}, "r"}}},
      {"value outside mask", {{"read", Action::kAllow, 0, {{1, Op::kMaskedEq, 0x100, 0xff}}, "r"}}},
  };
  for (const BadPolicy& c : cases) {
    auto r = validate(Policy{c.rules, ENOSYS});
    ASSERT_FALSE(r.ok()) << c.why;
    EXPECT_NE(r.error().message().find(c.rules[0].syscall), std::string::npos)
        << c.why << ": " << r.error().message();
  }
  EXPECT_FALSE(validate(Policy{{}, 0}).ok()) << "default errno 0";
}

}  // namespace
}  // namespace corral::policy::seccomp
