// SPDX-License-Identifier: Apache-2.0
// Behavioural tests of the seccomp filter: each claim attacked in a child, beside a control.
#include "sandbox/seccomp.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/if_ether.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace corral::sandbox::seccomp {
namespace {

namespace pol = policy::seccomp;

// Never mapped (below mmap_min_addr): a syscall the filter lets through fails with EFAULT.
void* const kBad = reinterpret_cast<void*>(8);
constexpr int kSetupFailed = 121;  // exit code of a child whose NNP or install step failed

const Program& program() {
  static const Program p = [] {
    auto r = compile(pol::sandboxPolicy());
    if (!r.ok()) {
      ADD_FAILURE() << "compile: " << r.error().message();
      return Program{};
    }
    return std::move(r).value();
  }();
  return p;
}

enum class Mode { kControl, kFiltered };

struct ChildResult {
  int status = 0;   // from waitpid
  std::string out;  // everything the child wrote to the pipe
};

// Forks; the child sets no_new_privs, installs the filter when filtered, then runs
// body(write_fd) and exits. Control and filtered children differ only in the filter.
template <typename Body>
ChildResult runChild(Mode mode, Body body) {
  const Program& filter = program();  // compiled here, never in the child
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {-1, "pipe2 failed"};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    // No core files from the SIGSYS kills; a fresh session so vhangup has no terminal.
    const struct rlimit no_core = {0, 0};
    if (::setrlimit(RLIMIT_CORE, &no_core) != 0 || ::setsid() < 0 ||
        ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
      ::_exit(kSetupFailed);
    if (mode == Mode::kFiltered && install(filter) != 0) ::_exit(kSetupFailed);
    body(fds[1]);
    ::_exit(0);
  }
  ::close(fds[1]);
  ChildResult r;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    r.out.append(buf, n);
  }
  ::close(fds[0]);
  while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return r;
}

long errOf(long rc) { return rc < 0 ? errno : 0; }

std::string errName(long err) {
  if (err == 0) return "success";
  const char* name = ::strerrorname_np(static_cast<int>(err));
  return name != nullptr ? name : std::to_string(err);
}

struct ProbeResult {
  bool completed = false;  // the probe returned and reported
  long err = -1;           // its errno, 0 on success
  int signal = 0;          // the signal that killed the child, if one did
  int status = 0;          // the raw wait status, for failure messages
};

template <typename Probe>
ProbeResult runProbe(Mode mode, Probe probe) {
  ChildResult c = runChild(mode, [&](int fd) {
    long err = probe();
    if (::write(fd, &err, sizeof err) != sizeof err) ::_exit(kSetupFailed);
  });
  ProbeResult r;
  r.status = c.status;
  r.signal = WIFSIGNALED(c.status) ? WTERMSIG(c.status) : 0;
  r.completed = WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0 && c.out.size() == sizeof(long);
  if (r.completed) std::memcpy(&r.err, c.out.data(), sizeof r.err);
  return r;
}

// The claim is that the filter makes `probe` fail with `want`; the control shows the same
// probe gets something else without it (else the test could not fail, and it skips loudly).
template <typename Probe>
void expectFilterErrno(const char* what, int want, Probe probe) {
  ASSERT_FALSE(program().insns.empty()) << "the sandbox policy did not compile";
  ProbeResult control = runProbe(Mode::kControl, probe);
  ASSERT_TRUE(control.completed) << what << ": control child did not report, status "
                                 << control.status;
  if (control.err == want)
    GTEST_SKIP() << what << ": this kernel itself returns " << errName(want)
                 << ", so the filter's answer cannot be told apart";
  ProbeResult filtered = runProbe(Mode::kFiltered, probe);
  ASSERT_TRUE(filtered.completed) << what << ": filtered child did not report, status "
                                  << filtered.status << " (" << kSetupFailed << " = setup failed)";
  EXPECT_EQ(filtered.err, want) << what << " under the filter: got " << errName(filtered.err)
                                << " (control: " << errName(control.err) << ")";
}

struct NamedProbe {
  const char* name;
  long (*probe)();
};

// Registers one plain test per case, named Suite.<case>. TEST_P would put "# GetParam() = ..."
// into the names CMake's test discovery gives ctest, and the claim ledger cites those names.
class CaseTest : public testing::Test {
 public:
  explicit CaseTest(std::function<void()> body) : body_(std::move(body)) {}
  void TestBody() override { body_(); }

 private:
  std::function<void()> body_;
};
template <typename Case, size_t N>
bool registerCases(const char* suite, const char* prefix, const Case (&cases)[N],
                   void (*body)(const Case&)) {
  for (const Case& c : cases)
    testing::RegisterTest(
        suite, (std::string(prefix) + c.name).c_str(), nullptr, nullptr, __FILE__, __LINE__,
        [&c, body]() -> testing::Test* { return new CaseTest([&c, body] { body(c); }); });
  return true;
}

// Harmless arguments: unknown ops, bad pointers, fd -1, flag combinations the kernel rejects
// before acting. Even as root without the filter none of these changes anything.
const NamedProbe kDangerous[] = {
    {"mount", [] { return errOf(::syscall(SYS_mount, kBad, kBad, kBad, 0, kBad)); }},
    {"umount2", [] { return errOf(::syscall(SYS_umount2, kBad, 0)); }},
    {"pivot_root", [] { return errOf(::syscall(SYS_pivot_root, kBad, kBad)); }},
    {"chroot", [] { return errOf(::syscall(SYS_chroot, kBad)); }},
    {"setns", [] { return errOf(::syscall(SYS_setns, -1, 0)); }},
    {"keyctl", [] { return errOf(::syscall(SYS_keyctl, -1L, 0, 0, 0, 0)); }},
    {"add_key", [] { return errOf(::syscall(SYS_add_key, kBad, kBad, kBad, 0, 0)); }},
    {"request_key", [] { return errOf(::syscall(SYS_request_key, kBad, kBad, kBad, 0)); }},
    {"bpf", [] { return errOf(::syscall(SYS_bpf, -1, kBad, 0)); }},
    {"perf_event_open", [] { return errOf(::syscall(SYS_perf_event_open, kBad, 0, -1, -1, 0)); }},
    {"userfaultfd", [] { return errOf(::syscall(SYS_userfaultfd, -1)); }},
    {"io_uring_setup", [] { return errOf(::syscall(SYS_io_uring_setup, 0, kBad)); }},
    {"io_uring_enter", [] { return errOf(::syscall(SYS_io_uring_enter, -1, 0, 0, 0, kBad, 0)); }},
    {"io_uring_register", [] { return errOf(::syscall(SYS_io_uring_register, -1, 0, kBad, 0)); }},
    {"kexec_load", [] { return errOf(::syscall(SYS_kexec_load, 0, 1000, kBad, 0x8000)); }},
    {"kexec_file_load",
     [] { return errOf(::syscall(SYS_kexec_file_load, -1, -1, 0, kBad, 0xff00)); }},
    {"init_module", [] { return errOf(::syscall(SYS_init_module, kBad, 0, kBad)); }},
    {"finit_module", [] { return errOf(::syscall(SYS_finit_module, -1, kBad, 0)); }},
    {"delete_module", [] { return errOf(::syscall(SYS_delete_module, kBad, 0)); }},
    {"open_by_handle_at", [] { return errOf(::syscall(SYS_open_by_handle_at, -1, kBad, 0)); }},
    {"name_to_handle_at",
     [] { return errOf(::syscall(SYS_name_to_handle_at, -1, kBad, kBad, kBad, 0)); }},
    {"ptrace", [] { return errOf(::syscall(SYS_ptrace, PTRACE_PEEKUSER, 0x7fffffff, 0, 0)); }},
    {"process_vm_readv",
     [] { return errOf(::syscall(SYS_process_vm_readv, ::getpid(), kBad, 1, kBad, 1, 0)); }},
    {"process_vm_writev",
     [] { return errOf(::syscall(SYS_process_vm_writev, ::getpid(), kBad, 1, kBad, 1, 0)); }},
    {"iopl", [] { return errOf(::syscall(SYS_iopl, 4)); }},
    {"ioperm", [] { return errOf(::syscall(SYS_ioperm, 0x10000, 1, 0)); }},
    {"swapon", [] { return errOf(::syscall(SYS_swapon, kBad, 0)); }},
    {"swapoff", [] { return errOf(::syscall(SYS_swapoff, kBad)); }},
    {"reboot", [] { return errOf(::syscall(SYS_reboot, 0, 0, 0, kBad)); }},
    {"acct", [] { return errOf(::syscall(SYS_acct, kBad)); }},
    {"quotactl", [] { return errOf(::syscall(SYS_quotactl, 0xff, kBad, 0, kBad)); }},
    {"settimeofday", [] { return errOf(::syscall(SYS_settimeofday, kBad, kBad)); }},
    {"clock_settime", [] { return errOf(::syscall(SYS_clock_settime, CLOCK_REALTIME, kBad)); }},
    {"adjtimex", [] { return errOf(::syscall(SYS_adjtimex, kBad)); }},
    {"clock_adjtime", [] { return errOf(::syscall(SYS_clock_adjtime, CLOCK_REALTIME, kBad)); }},
    {"syslog", [] { return errOf(::syscall(SYS_syslog, 10000, 0, 0)); }},
    {"lookup_dcookie", [] { return errOf(::syscall(SYS_lookup_dcookie, 0, kBad, 0)); }},
    {"fsopen", [] { return errOf(::syscall(SYS_fsopen, kBad, 0)); }},
    {"fsconfig", [] { return errOf(::syscall(SYS_fsconfig, -1, 0, 0, 0, 0)); }},
    {"fsmount", [] { return errOf(::syscall(SYS_fsmount, -1, 0, 0)); }},
    {"fspick", [] { return errOf(::syscall(SYS_fspick, -1, kBad, 0)); }},
    {"open_tree", [] { return errOf(::syscall(SYS_open_tree, -1, kBad, 0)); }},
    {"move_mount", [] { return errOf(::syscall(SYS_move_mount, -1, kBad, -1, kBad, 0)); }},
    {"mount_setattr", [] { return errOf(::syscall(SYS_mount_setattr, -1, kBad, 0, kBad, 0)); }},
    {"vhangup", [] { return errOf(::syscall(SYS_vhangup)); }},
    {"nfsservctl", [] { return errOf(::syscall(SYS_nfsservctl, 0, kBad, kBad)); }},
    {"uselib", [] { return errOf(::syscall(SYS_uselib, kBad)); }},
    {"pidfd_getfd", [] { return errOf(::syscall(SYS_pidfd_getfd, -1, 0, 0)); }},
    {"kcmp", [] { return errOf(::syscall(SYS_kcmp, ::getpid(), ::getpid(), 1000, 0, 0)); }},
    {"modify_ldt", [] { return errOf(::syscall(SYS_modify_ldt, 1, kBad, 0)); }},
    {"personality_no_randomize",
     [] { return errOf(::syscall(SYS_personality, ADDR_NO_RANDOMIZE)); }},
    {"personality_read_implies_exec",
     [] { return errOf(::syscall(SYS_personality, READ_IMPLIES_EXEC)); }},
};

const bool kDangerousRegistered = registerCases(
    "SeccompDangerousSyscallsDenied", "", kDangerous,
    +[](const NamedProbe& c) { expectFilterErrno(c.name, ENOSYS, c.probe); });

// --- Foreign ABIs: the verdict is the kill, not an errno.

long int80Getpid() {
  long ret;
  // int $0x80 from a 64-bit process runs the i386 syscall table (20 = getpid there).
  asm volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
  return ret < 0 ? -ret : 0;
}
long x32Getpid() { return errOf(::syscall(__X32_SYSCALL_BIT | SYS_getpid)); }

void expectKilledBySigsys(const char* what, long (*probe)()) {
  ASSERT_FALSE(program().insns.empty()) << "the sandbox policy did not compile";
  ProbeResult control = runProbe(Mode::kControl, probe);
  if (control.signal != 0)
    GTEST_SKIP() << what << ": killed by signal " << control.signal
                 << " without a filter; this kernel does not offer the ABI";
  ASSERT_TRUE(control.completed) << what << ": control failed to report";
  ProbeResult filtered = runProbe(Mode::kFiltered, probe);
  EXPECT_EQ(filtered.signal, SIGSYS) << what << " must kill the process; it returned "
                                     << (filtered.completed ? errName(filtered.err) : "?");
}

TEST(SeccompForeignAbiRefused, Int80SyscallKillsTheProcess) {
  expectKilledBySigsys("int $0x80 getpid", int80Getpid);
}
TEST(SeccompForeignAbiRefused, X32SyscallKillsTheProcess) {
  expectKilledBySigsys("x32 getpid", x32Getpid);
}

// --- Socket families and types.

struct SocketCase {
  const char* name;
  uint64_t family;
  int type;
  int protocol;
  int want;  // the filter's errno
};
const SocketCase kRefusedSockets[] = {
    // NETLINK_ROUTE (0) is allowed (getifaddrs); every other protocol is refused.
    {"netlink_audit", AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, 9, EAFNOSUPPORT},
    {"netlink_generic", AF_NETLINK, SOCK_RAW, 16, EAFNOSUPPORT},
    {"packet", AF_PACKET, SOCK_DGRAM, 0, EAFNOSUPPORT},
    {"vsock", AF_VSOCK, SOCK_STREAM, 0, EAFNOSUPPORT},
    {"alg", AF_ALG, SOCK_SEQPACKET, 0, EAFNOSUPPORT},
    {"key", AF_KEY, SOCK_RAW, 2, EAFNOSUPPORT},
    {"xdp", AF_XDP, SOCK_RAW, 0, EAFNOSUPPORT},
    {"netlink_in_high_bits", (uint64_t{1} << 32) | AF_NETLINK, SOCK_DGRAM, 0, EAFNOSUPPORT},
    {"inet_raw", AF_INET, SOCK_RAW, IPPROTO_ICMP, ESOCKTNOSUPPORT},
    {"inet6_raw_nonblock", AF_INET6, SOCK_RAW | SOCK_NONBLOCK, IPPROTO_ICMPV6, ESOCKTNOSUPPORT},
    {"inet_packet", AF_INET, SOCK_PACKET | SOCK_CLOEXEC, htons(ETH_P_ALL), ESOCKTNOSUPPORT},
    // Protocols beyond TCP, UDP and ping (red team, session 13); a kernel without one skips.
    {"inet_mptcp", AF_INET, SOCK_STREAM, 262, EPROTONOSUPPORT},
    {"inet6_mptcp", AF_INET6, SOCK_STREAM, 262, EPROTONOSUPPORT},
    {"inet_udplite", AF_INET, SOCK_DGRAM, 136, EPROTONOSUPPORT},
    {"inet6_udplite", AF_INET6, SOCK_DGRAM, 136, EPROTONOSUPPORT},
    {"inet_sctp", AF_INET, SOCK_STREAM, 132, EPROTONOSUPPORT},
    {"inet_smc", AF_INET, SOCK_STREAM, 256, EPROTONOSUPPORT},
    {"inet_dccp", AF_INET, SOCK_DCCP, 33, ESOCKTNOSUPPORT},
    {"inet_seqpacket_is_sctp", AF_INET, SOCK_SEQPACKET, 0, ESOCKTNOSUPPORT},
    {"inet6_rdm", AF_INET6, SOCK_RDM, 0, ESOCKTNOSUPPORT},
};

long trySocket(const SocketCase& c) {
  long fd = ::syscall(SYS_socket, c.family, c.type, c.protocol);
  return fd < 0 ? errno : (::close(static_cast<int>(fd)), 0);
}

const bool kSocketsRegistered = registerCases(
    "SeccompSocketFamiliesRestricted", "", kRefusedSockets,
    +[](const SocketCase& c) { expectFilterErrno(c.name, c.want, [&c] { return trySocket(c); }); });

TEST(SeccompSocketFamiliesRestricted, SocketpairIsUnixOnly) {
  expectFilterErrno("socketpair(AF_INET)", EAFNOSUPPORT, [] {
    int sv[2];
    return errOf(::socketpair(AF_INET, SOCK_STREAM, 0, sv));
  });
}

// Kernel TLS attaches through TCP_ULP: refused. Unconnected, the kernel itself says ENOTCONN
// (or ENOENT without the tls module), so the filter's EPERM is told apart.
TEST(SeccompSocketFamiliesRestricted, KernelTlsCannotBeAttached) {
  for (uint64_t level : {uint64_t{IPPROTO_TCP}, (uint64_t{1} << 32) | IPPROTO_TCP})
    expectFilterErrno("setsockopt(TCP_ULP)", EPERM, [level] {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) return static_cast<long>(errno);
      long err = errOf(::syscall(SYS_setsockopt, fd, level, uint64_t{TCP_ULP}, "tls", 3));
      ::close(fd);
      return err;
    });
}

TEST(SeccompSocketFamiliesRestricted, UnixInetAndInet6StillWork) {
  for (int family : {AF_UNIX, AF_INET, AF_INET6}) {
    SocketCase c{"allowed", static_cast<uint64_t>(family),
                 SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0};
    if (runProbe(Mode::kControl, [&] { return trySocket(c); }).err != 0) continue;  // e.g. no IPv6
    EXPECT_EQ(runProbe(Mode::kFiltered, [&] { return trySocket(c); }).err, 0)
        << "family " << family;
  }
  ProbeResult pair = runProbe(Mode::kFiltered, [] {
    int sv[2];
    return errOf(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
  });
  EXPECT_EQ(pair.err, 0) << "socketpair(AF_UNIX) under the filter";
}

// --- Terminal injection: fd -1 makes the unfiltered ioctl fail with EBADF, harmlessly.

const NamedProbe kInjection[] = {
    {"tiocsti", [] { return errOf(::syscall(SYS_ioctl, -1, uint64_t{TIOCSTI}, kBad)); }},
    {"tiocsti_high_bits",
     [] { return errOf(::syscall(SYS_ioctl, -1, (uint64_t{1} << 32) | TIOCSTI, kBad)); }},
    {"tioclinux", [] { return errOf(::syscall(SYS_ioctl, -1, uint64_t{TIOCLINUX}, kBad)); }},
    {"tioclinux_high_bits",
     [] { return errOf(::syscall(SYS_ioctl, -1, 0xffffffff00000000u | TIOCLINUX, kBad)); }},
};
const bool kInjectionRegistered = registerCases(
    "SeccompTtyInjectionDenied", "", kInjection,
    +[](const NamedProbe& c) { expectFilterErrno(c.name, EPERM, c.probe); });

TEST(SeccompTtyInjectionDenied, OtherIoctlsStillWork) {
  ProbeResult r = runProbe(Mode::kFiltered, [] {
    int fds[2], n = -1;
    if (::pipe(fds) != 0) return long{errno};
    return errOf(::ioctl(fds[0], FIONREAD, &n));
  });
  EXPECT_EQ(r.err, 0) << "FIONREAD under the filter: " << errName(r.err);
}

// --- Namespace creation.

struct FlagCase {
  const char* name;
  uint64_t flag;
};
const FlagCase kNamespaceFlags[] = {
    {"newuser", CLONE_NEWUSER},     {"newns", CLONE_NEWNS},     {"newpid", CLONE_NEWPID},
    {"newnet", CLONE_NEWNET},       {"newipc", CLONE_NEWIPC},   {"newuts", CLONE_NEWUTS},
    {"newcgroup", CLONE_NEWCGROUP}, {"newtime", CLONE_NEWTIME},
};
// CLONE_THREAD without CLONE_SIGHAND makes the unfiltered clone fail with EINVAL before it
// creates anything; CLONE_PARENT does the same for unshare.
const bool kCloneRegistered = registerCases(
    "SeccompNamespaceCreationDenied", "clone_", kNamespaceFlags, +[](const FlagCase& c) {
      expectFilterErrno(c.name, EPERM, [&c] {
        return errOf(::syscall(SYS_clone, c.flag | CLONE_THREAD, 0, 0, 0, 0));
      });
    });
const bool kUnshareRegistered = registerCases(
    "SeccompNamespaceCreationDenied", "unshare_", kNamespaceFlags, +[](const FlagCase& c) {
      expectFilterErrno(c.name, ENOSYS,
                        [&c] { return errOf(::syscall(SYS_unshare, c.flag | CLONE_PARENT)); });
    });

TEST(SeccompNamespaceCreationDenied, Clone3FailsWithEnosys) {
  expectFilterErrno("clone3", ENOSYS, [] { return errOf(::syscall(SYS_clone3, kBad, 88)); });
}

TEST(SeccompNamespaceCreationDenied, ForkThreadsAndPlainUnshareStillWork) {
  ProbeResult r = runProbe(Mode::kFiltered, [] {
    pid_t pid = ::fork();  // glibc: clone(SIGCHLD | CLONE_CHILD_*)
    if (pid == 0) ::_exit(7);
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid || WEXITSTATUS(status) != 7) return 1001L;
    pthread_t t;  // glibc tries clone3 first and falls back to clone on ENOSYS
    if (int e = ::pthread_create(
            &t, nullptr, [](void*) -> void* { return nullptr; }, nullptr))
      return long{e};
    if (int e = ::pthread_join(t, nullptr)) return long{e};
    return errOf(::unshare(CLONE_FILES | CLONE_FS));
  });
  EXPECT_EQ(r.err, 0) << "fork, a thread or unshare(CLONE_FILES|CLONE_FS) failed under the filter";
}

// --- Compilation.

// A classic-BPF interpreter for the opcodes libseccomp emits, to check the program against
// the policy's reference evaluator on every syscall number without forking.
uint32_t runBpf(const std::vector<sock_filter>& prog, const seccomp_data& data) {
  uint32_t a = 0;
  for (size_t pc = 0; pc < prog.size(); ++pc) {
    const sock_filter& i = prog[pc];
    switch (i.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        if (i.k + sizeof a > sizeof data) return ADD_FAILURE() << "load beyond seccomp_data", 0;
        std::memcpy(&a, reinterpret_cast<const char*>(&data) + i.k, sizeof a);
        break;
      case BPF_ALU | BPF_AND | BPF_K: a &= i.k; break;
      case BPF_JMP | BPF_JA: pc += i.k; break;
      case BPF_JMP | BPF_JEQ | BPF_K: pc += a == i.k ? i.jt : i.jf; break;
      case BPF_JMP | BPF_JGT | BPF_K: pc += a > i.k ? i.jt : i.jf; break;
      case BPF_JMP | BPF_JGE | BPF_K: pc += a >= i.k ? i.jt : i.jf; break;
      case BPF_JMP | BPF_JSET | BPF_K: pc += (a & i.k) != 0 ? i.jt : i.jf; break;
      case BPF_RET | BPF_K: return i.k;
      default: return ADD_FAILURE() << "unexpected BPF opcode " << i.code << " at " << pc, 0;
    }
  }
  return ADD_FAILURE() << "fell off the end of the program", 0;
}

uint32_t expected(const pol::Policy& policy, const char* name, const pol::SyscallArgs& args) {
  pol::Verdict v =
      name ? pol::evaluate(policy, name, args) : pol::Verdict{pol::Action::kErrno, ENOSYS};
  return v.action == pol::Action::kAllow ? SECCOMP_RET_ALLOW : SECCOMP_RET_ERRNO | v.err;
}

TEST(SeccompCompile, BpfAgreesWithThePolicyEvaluator) {
  const pol::Policy policy = pol::sandboxPolicy();
  ASSERT_FALSE(program().insns.empty());
  for (int nr = 0; nr < 512; ++nr) {
    std::unique_ptr<char, decltype(&std::free)> name(
        seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr), &std::free);
    std::set<uint64_t> probes{0, 1, 2, ~uint64_t{0}, uint64_t{1} << 32};
    for (const pol::Rule& r : policy.rules)
      if (name && r.syscall == name.get())
        for (const pol::ArgCond& c : r.conds)
          for (uint64_t v : {c.value, c.value + 1, c.value - 1, c.value | c.mask, c.mask,
                             c.value | (uint64_t{1} << 32), c.value | 0xffffffff00000000u})
            probes.insert(v);
    for (uint64_t a0 : probes)
      for (uint64_t a1 : probes) {
        seccomp_data d{nr, AUDIT_ARCH_X86_64, 0, {a0, a1, a0, a1, a0, a1}};
        ASSERT_EQ(runBpf(program().insns, d),
                  expected(policy, name.get(), {a0, a1, a0, a1, a0, a1}))
            << "syscall " << nr << " (" << (name ? name.get() : "?") << ") args " << a0 << ", "
            << a1;
      }
    // Foreign ABIs: the same number as i386 or as x32 kills, whatever the policy says.
    EXPECT_EQ(runBpf(program().insns, {nr, AUDIT_ARCH_I386, 0, {}}), SECCOMP_RET_KILL_PROCESS)
        << nr;
    EXPECT_EQ(runBpf(program().insns, {nr | __X32_SYSCALL_BIT, AUDIT_ARCH_X86_64, 0, {}}),
              SECCOMP_RET_KILL_PROCESS)
        << nr;
  }
}

TEST(SeccompCompile, SandboxPolicyCompilesQuicklyAndFits) {
  constexpr int kRuns = 50;
  auto start = std::chrono::steady_clock::now();
  size_t insns = 0;
  for (int i = 0; i < kRuns; ++i) {
    auto r = compile(pol::sandboxPolicy());
    ASSERT_TRUE(r.ok()) << r.error().message();
    insns = r->insns.size();
  }
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                                  start) /
            kRuns;
  RecordProperty("compile_us", static_cast<int>(us.count()));
  RecordProperty("insns", static_cast<int>(insns));
  std::cout << "seccomp compile: " << us.count() << " us, " << insns << " insns\n";
  EXPECT_LE(insns, size_t{BPF_MAXINSNS});
#if !defined(__SANITIZE_ADDRESS__) && !defined(CORRAL_SANITIZED)
  // Generous (about 1.5 ms is typical): this catches a regression to tens of milliseconds,
  // not noise on a loaded machine. Sanitizer builds are too slow to say anything.
  EXPECT_LT(us.count(), 20000) << "compile() is on every corral exec's critical path";
#endif
}

TEST(SeccompCompile, UnresolvableSyscallIsNamedInTheError) {
  for (const char* name : {"no_such_syscall", "chown32" /* i386 only */}) {
    auto r = compile(pol::Policy{{{name, pol::Action::kAllow, 0, {}, "test"}}, ENOSYS});
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_NE(r.error().message().find(name), std::string::npos) << r.error().message();
  }
}

TEST(SeccompCompile, InvalidPolicyIsRefused) {
  pol::Rule twice{"read",
                  pol::Action::kAllow,
                  0,
                  {{0, pol::ArgCond::Op::kGt, 1}, {0, pol::ArgCond::Op::kLt, 9}},
                  "test"};
  auto r = compile(pol::Policy{{twice}, ENOSYS});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("read"), std::string::npos) << r.error().message();
}

// Small policies through the whole compiler (refusals, range search, allowlist), checked on
// every syscall number against the evaluator, as the sandbox policy is above. The search must
// not fail open when it has nothing to search, nor when one range is all there is.
TEST(SeccompCompile, PoliciesWithFewOrNoPlainAllowsAgreeWithTheEvaluator) {
  const pol::Rule conditional{"write", pol::Action::kAllow, 0, {{0, pol::ArgCond::Op::kEq, 1}}, "test"};
  const pol::Rule plain{"getpid", pol::Action::kAllow, 0, {}, "test"};
  const pol::Rule refined{"ioctl", pol::Action::kAllow, 0, {}, "test"};
  const pol::Rule refusal{"ioctl", pol::Action::kErrno, EPERM, {{1, pol::ArgCond::Op::kEq, 0x5412}}, "test"};
  for (const pol::Policy& policy : {pol::Policy{{conditional}, ENOSYS}, pol::Policy{{plain}, ENOSYS},
                                    pol::Policy{{conditional, plain, refined, refusal}, ENOSYS}}) {
    auto compiled = compile(policy);
    ASSERT_TRUE(compiled.ok()) << compiled.error().message();
    for (int nr = 0; nr < 512; ++nr) {
      std::unique_ptr<char, decltype(&std::free)> name(seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr),
                                                       &std::free);
      for (uint64_t a : {uint64_t{0}, uint64_t{1}, uint64_t{0x5412}}) {
        seccomp_data d{nr, AUDIT_ARCH_X86_64, 0, {a, a, a, a, a, a}};
        ASSERT_EQ(runBpf(compiled->insns, d), expected(policy, name.get(), {a, a, a, a, a, a}))
            << "syscall " << nr << " arg " << a << " in a policy of " << policy.rules.size() << " rules";
      }
    }
  }
}

TEST(SeccompCompile, InstallRefusesWithoutNoNewPrivs) {
  ASSERT_FALSE(program().insns.empty());
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    int rc = install(program());  // no PR_SET_NO_NEW_PRIVS: even root must be refused
    ::_exit(::write(fds[1], &rc, sizeof rc) == sizeof rc ? 0 : 1);
  }
  ::close(fds[1]);
  int rc = -1;
  EXPECT_EQ(::read(fds[0], &rc, sizeof rc), static_cast<ssize_t>(sizeof rc));
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  EXPECT_EQ(rc, EPERM) << "install() without no_new_privs returned " << errName(rc);
}

// --- Compatibility: real programs under the filter.

struct CompatCase {
  const char* name;
  std::vector<const char*> argv;  // argv[0] is an absolute path
  const char* expect;             // a substring of stdout+stderr
};
constexpr char kPython[] = R"(import os, subprocess, socket, threading
out = []
t = threading.Thread(target=lambda: out.append(sum(range(1000)))); t.start(); t.join()
assert out == [499500]
assert subprocess.run(['/bin/echo', 'sub'], capture_output=True, check=True).stdout == b'sub\n'
a, b = socket.socketpair(); a.sendall(b'x'); assert b.recv(1) == b'x'
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM); s.bind(('127.0.0.1', 0)); s.listen(1)
c = socket.create_connection(s.getsockname()); conn, _ = s.accept(); c.sendall(b'y')
assert conn.recv(1) == b'y'
pid = os.fork()
if pid == 0: os._exit(3)
assert os.waitpid(pid, 0)[1] >> 8 == 3
print('ok'))";
const CompatCase kCompat[] = {
    {"sh_pipeline", {"/bin/sh", "-c", "echo hi | cat"}, "hi"},
    {"python", {"/usr/bin/python3", "-c", kPython}, "ok"},
    {"git_version", {"/usr/bin/git", "--version"}, "git version"},
    {"git_commit",
     {"/bin/sh", "-c",
      "d=$(mktemp -d) && cd $d && git init -q && git -c user.name=t "
      "-c user.email=t@t commit -q --allow-empty -m made && git log --format=%s; "
      "cd / && rm -rf $d"},
     "made"},
    {"curl_version", {"/usr/bin/curl", "--version"}, "curl"},
    {"gcc_build",
     {"/bin/sh", "-c",
      "d=$(mktemp -d) && printf 'int main(void){return 0;}\\n' > $d/a.c "
      "&& gcc -o $d/a $d/a.c && $d/a && echo built; rm -rf $d"},
     "built"},
    {"make_version", {"/usr/bin/make", "--version"}, "GNU Make"},
    {"coreutils",
     {"/bin/sh", "-c",
      "ls / >/dev/null && sort /etc/os-release >/dev/null && nproc "
      ">/dev/null && id -u >/dev/null && date >/dev/null && echo fine"},
     "fine"},
    {"node",
     {"/usr/bin/node", "-e",
      "require('child_process').execFileSync('true');"
      "require('fs').readdirSync('/'); console.log('ok')"},
     "ok"},
    {"java_version", {"/usr/bin/java", "-version"}, "version"},
};

void runCompat(const CompatCase& c) {
  if (::access(c.argv[0], X_OK) != 0) GTEST_SKIP() << c.argv[0] << " is not installed";
  std::vector<char*> argv;
  for (const char* a : c.argv) argv.push_back(const_cast<char*>(a));
  argv.push_back(nullptr);
  std::string tmp =
      std::string("TMPDIR=") + (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  const char* envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8",
                        tmp.c_str(), nullptr};
  ChildResult r = runChild(Mode::kFiltered, [&](int fd) {
    if (::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0) ::_exit(kSetupFailed);
    ::execve(argv[0], argv.data(), const_cast<char* const*>(envp));
    ::_exit(kSetupFailed);
  });
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0)
      << c.name << " under the filter: status " << r.status << ", output:\n"
      << r.out;
  EXPECT_NE(r.out.find(c.expect), std::string::npos) << c.name << " output:\n" << r.out;
}
const bool kCompatRegistered = registerCases("SeccompCompat", "", kCompat, runCompat);

}  // namespace
}  // namespace corral::sandbox::seccomp
