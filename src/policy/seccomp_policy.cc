// SPDX-License-Identifier: Apache-2.0
// The sandbox's syscall allowlist (data, one reason per entry) and its reference evaluator.
#include "policy/seccomp_policy.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <linux/netlink.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>

#include <cerrno>
#include <map>
#include <string>

namespace corral::policy::seccomp {
namespace {

using Op = ArgCond::Op;

// Every namespace flag. CLONE_NEWTIME (0x80) overlaps the exit-signal byte of clone(2); no real
// program asks for exit signal >= 128, so refusing that bit in clone costs nothing.
constexpr uint64_t kNamespaceFlags[] = {CLONE_NEWUSER,   CLONE_NEWNS,  CLONE_NEWPID,
                                        CLONE_NEWNET,    CLONE_NEWIPC, CLONE_NEWUTS,
                                        CLONE_NEWCGROUP, CLONE_NEWTIME};
constexpr uint64_t kAllNamespaceFlags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                                        CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP |
                                        CLONE_NEWTIME;
// ioctl's cmd is an unsigned int: the kernel ignores the high 32 bits (CVE-2019-10063).
constexpr uint64_t kLow32 = 0xffffffffu;
// The kernel reads the socket type as (type & SOCK_TYPE_MASK); matching the same bits means
// SOCK_NONBLOCK, SOCK_CLOEXEC and any garbage above them cannot hide a raw socket.
constexpr uint64_t kSockTypeMask = 0xf;
constexpr uint64_t kPersonalityQuery = 0xffffffffu;

Rule allow(std::string_view name, std::string_view reason) {
  return {name, Action::kAllow, 0, {}, reason};
}
Rule allowIf(std::string_view name, ArgCond cond, std::string_view reason) {
  return {name, Action::kAllow, 0, {cond}, reason};
}
Rule deny(std::string_view name, std::string_view reason) {
  return {name, Action::kErrno, ENOSYS, {}, reason};
}
Rule refuse(std::string_view name, int err, std::vector<ArgCond> conds, std::string_view reason) {
  return {name, Action::kErrno, err, std::move(conds), reason};
}

// The lists read better packed by purpose than one name per line.
// clang-format off
void addAllowed(std::vector<Rule>& r) {
  constexpr std::string_view kFiles =
      "file I/O; which paths is landlock's and the mount table's job";
  for (auto n : {"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev",
                 "preadv2", "pwritev2", "lseek", "open", "openat", "openat2", "creat", "close",
                 "close_range", "dup", "dup2", "dup3", "flock", "ftruncate", "truncate",
                 "fsync", "fdatasync", "syncfs", "sync_file_range", "fallocate", "fadvise64",
                 "readahead", "sendfile", "splice", "tee", "vmsplice", "copy_file_range"})
    r.push_back(allow(n, kFiles));
  constexpr std::string_view kMeta = "file metadata and directory tree operations";
  for (auto n : {"stat", "fstat", "lstat", "newfstatat", "statx", "statfs", "fstatfs", "access",
                 "faccessat", "faccessat2", "readlink", "readlinkat", "getdents", "getdents64",
                 "getcwd", "chdir", "fchdir", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat",
                 "rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat",
                 "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown",
                 "fchownat", "umask", "utime", "utimes", "futimesat", "utimensat", "getxattr",
                 "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr", "setxattr",
                 "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
                 "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch"})
    r.push_back(allow(n, kMeta));
  r.push_back(allow("mknod", "mkfifo and sockets; device nodes need CAP_MKNOD, which we lack"));
  r.push_back(allow("mknodat", "mkfifo and sockets; device nodes need CAP_MKNOD, which we lack"));
  r.push_back(allow("sync", "installers call it; a host-wide flush is a nuisance, not a breach"));
  constexpr std::string_view kMem = "memory management of the process's own address space";
  for (auto n : {"brk", "mmap", "munmap", "mprotect", "mremap", "msync", "mincore", "madvise",
                 "mlock", "mlock2", "munlock", "mlockall", "munlockall", "pkey_alloc",
                 "pkey_free", "pkey_mprotect", "membarrier", "memfd_create", "cachestat",
                 "map_shadow_stack"})
    r.push_back(allow(n, kMem));
  constexpr std::string_view kProc =
      "process and thread lifecycle inside the sandbox's pid namespace";
  for (auto n : {"execve", "execveat", "fork", "vfork", "exit", "exit_group", "wait4", "waitid",
                 "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open",
                 "pidfd_send_signal", "getpid", "getppid", "gettid", "getpgid", "setpgid",
                 "getpgrp", "getsid", "setsid", "set_tid_address", "set_robust_list", "rseq",
                 "arch_prctl", "prctl", "futex", "futex_waitv", "futex_wake", "futex_wait",
                 "futex_requeue", "restart_syscall"})
    r.push_back(allow(n, kProc));
  constexpr std::string_view kSig = "signals, timers and clocks (reading, never setting, the time)";
  for (auto n : {"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending",
                 "rt_sigtimedwait", "rt_sigsuspend", "sigaltstack", "pause", "alarm",
                 "getitimer", "setitimer", "nanosleep", "clock_nanosleep", "clock_gettime",
                 "clock_getres", "gettimeofday", "time", "times", "timer_create",
                 "timer_settime", "timer_gettime", "timer_getoverrun", "timer_delete",
                 "timerfd_create", "timerfd_settime", "timerfd_gettime", "signalfd",
                 "signalfd4", "eventfd", "eventfd2"})
    r.push_back(allow(n, kSig));
  constexpr std::string_view kPoll = "event loops (node, python asyncio, curl)";
  for (auto n : {"poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1",
                 "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "pipe", "pipe2"})
    r.push_back(allow(n, kPoll));
  constexpr std::string_view kNet = "sockets already created under the family rules below";
  for (auto n : {"bind", "connect", "listen", "accept", "accept4", "getsockname", "getpeername",
                 "getsockopt", "sendto", "recvfrom", "sendmsg", "recvmsg",
                 "sendmmsg", "recvmmsg", "shutdown"})
    r.push_back(allow(n, kNet));
  constexpr std::string_view kCreds = "identity queries; changes fail without capabilities";
  for (auto n : {"getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups",
                 "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid",
                 "setfsgid", "setgroups", "capget", "capset"})
    r.push_back(allow(n, kCreds));
  constexpr std::string_view kSched = "scheduling and limits; raising either needs capabilities";
  for (auto n : {"sched_yield", "sched_getaffinity", "sched_setaffinity", "sched_getparam",
                 "sched_setparam", "sched_getscheduler", "sched_setscheduler",
                 "sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval",
                 "sched_getattr", "sched_setattr", "getpriority", "setpriority", "ioprio_get",
                 "ioprio_set", "getrlimit", "setrlimit", "prlimit64", "getrusage"})
    r.push_back(allow(n, kSched));
  constexpr std::string_view kInfo = "system information tools and runtimes read (nproc, uname)";
  for (auto n : {"uname", "sysinfo", "getcpu", "getrandom"}) r.push_back(allow(n, kInfo));
  constexpr std::string_view kIpc = "System V and POSIX IPC, confined by the IPC namespace";
  for (auto n : {"shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl",
                 "msgget", "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend",
                 "mq_timedreceive", "mq_notify", "mq_getsetattr"})
    r.push_back(allow(n, kIpc));
  for (auto n : {"io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents",
                 "io_pgetevents"})
    r.push_back(allow(n, "Linux AIO (databases); unlike io_uring it never bypasses seccomp"));
  for (auto n : {"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
                 "seccomp"})
    r.push_back(allow(n, "self-sandboxing can only narrow what is allowed (no_new_privs is set)"));
}

void addRestricted(std::vector<Rule>& r) {
  r.push_back(allow("ioctl", "terminals, FIONREAD and friends; injection is refused below"));
  for (uint64_t cmd : {uint64_t{TIOCSTI}, uint64_t{TIOCLINUX}})
    r.push_back(refuse("ioctl", EPERM, {{1, Op::kMaskedEq, cmd, kLow32}},
                       "TIOCSTI/TIOCLINUX push keystrokes into a terminal outside the sandbox"));

  // F_SETPIPE_SZ included: no host pipe is ever handed over (stdio_relay.h), so the pipes
  // the command can resize are its own and corral's relay pipes.
  r.push_back(allow("fcntl", "descriptor flags, locks and pipe sizes"));

  r.push_back(allow("clone", "fork and threads; namespace flags are refused below"));
  for (uint64_t flag : kNamespaceFlags)
    r.push_back(refuse("clone", EPERM, {{0, Op::kMaskedEq, flag, flag}},
                       "a new namespace (user ns above all) is kernel attack surface"));
  r.push_back(allowIf("unshare", {0, Op::kMaskedEq, 0, kAllNamespaceFlags},
                      "unshare(CLONE_FILES|CLONE_FS) only; a namespace flag gets ENOSYS"));

  r.push_back(allow("socket", "networking; families and types are restricted below"));
  // Family refusals: anything but exactly 1, 2, 10 or 16 (64-bit compares, so high garbage
  // bits are refused too). They never overlap the type refusals, which name an allowed family.
  constexpr std::string_view kFamily = "only AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK sockets";
  r.push_back(refuse("socket", EAFNOSUPPORT, {{0, Op::kEq, AF_UNSPEC}}, kFamily));
  for (uint64_t fam = AF_INET + 1; fam < AF_INET6; ++fam)
    r.push_back(refuse("socket", EAFNOSUPPORT, {{0, Op::kEq, fam}}, kFamily));
  for (uint64_t fam = AF_INET6 + 1; fam < AF_NETLINK; ++fam)
    r.push_back(refuse("socket", EAFNOSUPPORT, {{0, Op::kEq, fam}}, kFamily));
  r.push_back(refuse("socket", EAFNOSUPPORT, {{0, Op::kGt, AF_NETLINK}}, kFamily));
  // Netlink: NETLINK_ROUTE (0) only, which getifaddrs(), if_nameindex() and libuv's
  // interface list read; in the sandbox's own network namespace it shows loopback alone, and
  // every change it offers needs CAP_NET_ADMIN, which the command lacks. Every other protocol
  // (audit, xfrm, netfilter, generic, uevent, sock_diag, ...) reaches a host-wide or large
  // kernel interface. EAFNOSUPPORT, which the kernel never returns for its built-in netlink
  // family, tells the filter's refusal apart. A 64-bit compare: high garbage bits are refused.
  r.push_back(refuse("socket", EAFNOSUPPORT, {{0, Op::kEq, AF_NETLINK}, {2, Op::kNe, NETLINK_ROUTE}},
                     "netlink: NETLINK_ROUTE only"));
  // ESOCKTNOSUPPORT, not EPERM: EPERM is the kernel's own answer to a raw socket without
  // CAP_NET_RAW, and the filter's answer should be told apart from it.
  for (uint64_t fam : {AF_UNIX, AF_INET, AF_INET6})
    for (uint64_t type : {SOCK_RAW, SOCK_PACKET})
      r.push_back(refuse("socket", ESOCKTNOSUPPORT,
                         {{0, Op::kEq, fam}, {1, Op::kMaskedEq, type, kSockTypeMask}},
                         "raw/packet sockets forge traffic; AF_INET+SOCK_PACKET is AF_PACKET"));
  // On AF_INET/AF_INET6 the other types only reach protocols below (SEQPACKET with protocol
  // 0 is SCTP, SOCK_DCCP is DCCP, RDM nothing).
  for (uint64_t fam : {AF_INET, AF_INET6})
    for (uint64_t type : {SOCK_RDM, SOCK_SEQPACKET, SOCK_DCCP})
      r.push_back(refuse("socket", ESOCKTNOSUPPORT, {{0, Op::kEq, fam}, {1, Op::kMaskedEq, type, kSockTypeMask}},
                         "TCP and UDP sockets only on AF_INET/AF_INET6"));
  // Protocols: AF_INET/AF_INET6 stream and datagram sockets are TCP and UDP (0 picks them),
  // and ping (ICMP, ICMPv6). The other protocols the kernel registers for those types are
  // attack surface no sandboxed tool needs: MPTCP (262), SMC (256), UDP-Lite (136), SCTP
  // (132), L2TP (115). A 64-bit compare: no high garbage bits hide one (the kernel reads an int).
  constexpr std::string_view kProto = "TCP, UDP and ping only on AF_INET/AF_INET6";
  for (uint64_t fam : {AF_INET, AF_INET6})
    for (uint64_t type : {SOCK_STREAM, SOCK_DGRAM})
      r.push_back(refuse("socket", EPROTONOSUPPORT,
                         {{0, Op::kEq, fam}, {1, Op::kMaskedEq, type, kSockTypeMask}, {2, Op::kGt, IPPROTO_ICMPV6}},
                         kProto));
  r.push_back(allow("setsockopt", "socket options; kernel TLS's upper-layer switch is refused below"));
  // TCP_ULP attaches kernel TLS (or espintcp) to a TCP socket: a large, CVE-rich parser no
  // tool inside needs. level and optname are ints: compared on their low 32 bits.
  r.push_back(refuse("setsockopt", EPERM, {{1, Op::kMaskedEq, IPPROTO_TCP, kLow32}, {2, Op::kMaskedEq, TCP_ULP, kLow32}},
                     "TCP_ULP (kernel TLS) on a socket"));
  r.push_back(allow("socketpair", "pipes between processes; only AF_UNIX, refused below"));
  r.push_back(refuse("socketpair", EAFNOSUPPORT, {{0, Op::kEq, AF_UNSPEC}}, "AF_UNIX only"));
  r.push_back(refuse("socketpair", EAFNOSUPPORT, {{0, Op::kGt, AF_UNIX}}, "AF_UNIX only"));

  // Compared on the low 32 bits because the kernel takes an unsigned int. PER_LINUX32 (what
  // `linux32`/`setarch i686` set) only changes uname's machine string; the flags that weaken
  // the address space (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, ADDR_LIMIT_*, MMAP_PAGE_ZERO) and
  // UNAME26 match none of the three values, so they fall through to ENOSYS.
  constexpr std::string_view kPers =
      "personality: only plain Linux, the query, and linux32 (uname)";
  for (uint64_t p : {uint64_t{PER_LINUX}, uint64_t{PER_LINUX32}, kPersonalityQuery})
    r.push_back(allowIf("personality", {0, Op::kMaskedEq, p, kLow32}, kPers));
  r.push_back(deny("clone3", "flags sit behind a pointer seccomp cannot read; glibc uses clone"));
}

void addDenied(std::vector<Rule>& r) {
  constexpr std::string_view kMount = "mount table changes; the sandbox's view is fixed by corral";
  for (auto n : {"mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick",
                 "open_tree", "move_mount", "mount_setattr"})
    r.push_back(deny(n, kMount));
  r.push_back(deny("chroot", "harmless without CAP_SYS_CHROOT, but no tool needs it"));
  r.push_back(deny("setns", "joining another namespace"));
  for (auto n : {"keyctl", "add_key", "request_key"})
    r.push_back(deny(n, "kernel keyrings are not namespaced; frequent source of CVEs"));
  r.push_back(deny("bpf", "eBPF verifier is a large kernel attack surface"));
  r.push_back(deny("perf_event_open", "side channels and a long CVE history"));
  r.push_back(deny("userfaultfd", "stalls kernel copies at will: a staple of race exploits"));
  for (auto n : {"io_uring_setup", "io_uring_enter", "io_uring_register"})
    r.push_back(deny(n, "io_uring performs I/O that seccomp never sees; frequent CVEs"));
  for (auto n : {"kexec_load", "kexec_file_load", "reboot"})
    r.push_back(deny(n, "replaces or stops the host kernel"));
  for (auto n : {"init_module", "finit_module", "delete_module"})
    r.push_back(deny(n, "kernel modules"));
  for (auto n : {"open_by_handle_at", "name_to_handle_at"})
    r.push_back(deny(n, "file handles bypass path-based confinement (the 'shocker' escape)"));
  r.push_back(deny("ptrace", "reads and writes other processes; denied wholesale (no gdb/strace)"));
  for (auto n : {"process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise"})
    r.push_back(deny(n, "reaches into another process's memory or fds"));
  r.push_back(deny("kcmp", "compares kernel objects across processes; only CRIU needs it"));
  for (auto n : {"iopl", "ioperm", "modify_ldt"})
    r.push_back(deny(n, "x86 hardware and segment state; only emulators and wine need these"));
  for (auto n : {"swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "vhangup",
                 "sethostname", "setdomainname", "fanotify_init", "lookup_dcookie",
                 "nfsservctl", "uselib"})
    r.push_back(deny(n, "host administration or obsolete interfaces"));
  for (auto n : {"settimeofday", "clock_settime", "adjtimex", "clock_adjtime"})
    r.push_back(deny(n, "sets the host clock; adjtimex's read-only mode hides in a struct"));
  for (auto n : {"mbind", "set_mempolicy", "get_mempolicy", "migrate_pages", "move_pages",
                 "set_mempolicy_home_node"})
    r.push_back(deny(n, "NUMA placement; libnuma treats ENOSYS as a single-node machine"));
}

// clang-format on

bool compare(Op op, uint64_t a, uint64_t value, uint64_t mask) {
  switch (op) {
    case Op::kEq: return a == value;
    case Op::kNe: return a != value;
    case Op::kMaskedEq: return (a & mask) == value;
    case Op::kLt: return a < value;
    case Op::kLe: return a <= value;
    case Op::kGt: return a > value;
    case Op::kGe: return a >= value;
  }
  return false;
}

bool matches(const Rule& rule, const SyscallArgs& args) {
  for (const ArgCond& c : rule.conds)
    if (!condHolds(c, args)) return false;
  return true;
}

struct Shape {
  int unconditional_allow = 0, conditional_allow = 0, unconditional_errno = 0, refusals = 0;
};

Error ruleError(std::string_view name, std::string_view what) {
  return Error(Errc::kInvalidArgument,
               "seccomp rule " + std::string(name) + ": " + std::string(what));
}

Result<void> checkRule(const Rule& rule) {
  if (rule.syscall.empty()) return ruleError("?", "no syscall name");
  if (rule.reason.empty()) return ruleError(rule.syscall, "no reason");
  if (rule.action == Action::kAllow && rule.err != 0)
    return ruleError(rule.syscall, "allow with an errno");
  if (rule.action == Action::kErrno && (rule.err <= 0 || rule.err > 4095))
    return ruleError(rule.syscall, "errno out of range");
  unsigned seen = 0;
  for (const ArgCond& c : rule.conds) {
    if (c.arg > 5) return ruleError(rule.syscall, "argument index above 5");
    // libseccomp 2.5.4 rejects two comparisons on one argument in a rule with EINVAL.
    if (seen & (1u << c.arg)) return ruleError(rule.syscall, "two conds on one argument");
    seen |= 1u << c.arg;
    if (c.op != Op::kMaskedEq && c.mask != 0)
      return ruleError(rule.syscall, "mask on a non-masked op");
    if (c.op == Op::kMaskedEq && (c.value & ~c.mask) != 0)
      return ruleError(rule.syscall, "masked value has bits outside the mask: never matches");
  }
  return {};
}

}  // namespace

Policy sandboxPolicy() {
  Policy p{{}, ENOSYS};
  p.rules.reserve(300);
  addAllowed(p.rules);
  addRestricted(p.rules);
  addDenied(p.rules);
  return p;
}

bool condHolds(const ArgCond& cond, const SyscallArgs& args) {
  return cond.arg < args.size() && compare(cond.op, args[cond.arg], cond.value, cond.mask);
}

Result<void> validate(const Policy& policy) {
  if (policy.default_errno <= 0 || policy.default_errno > 4095)
    return Error(Errc::kInvalidArgument, "seccomp policy: default errno out of range");
  std::map<std::string_view, Shape> shapes;
  for (const Rule& rule : policy.rules) {
    RETURN_IF_ERROR(checkRule(rule));
    Shape& s = shapes[rule.syscall];
    bool conditional = !rule.conds.empty();
    if (rule.action == Action::kAllow)
      (conditional ? s.conditional_allow : s.unconditional_allow)++;
    else
      (conditional ? s.refusals : s.unconditional_errno)++;
  }
  for (const auto& [name, s] : shapes) {
    bool refined_allow =
        s.unconditional_allow == 1 && s.conditional_allow == 0 && s.unconditional_errno == 0;
    bool conditional_allow = s.unconditional_allow == 0 && s.conditional_allow > 0 &&
                             s.unconditional_errno == 0 && s.refusals == 0;
    bool denial = s.unconditional_errno == 1 && s.unconditional_allow == 0 &&
                  s.conditional_allow == 0 && s.refusals == 0;
    if (!refined_allow && !conditional_allow && !denial)
      return ruleError(name, "mixes rule shapes (see seccomp_policy.h)");
  }
  return {};
}

Verdict evaluate(const Policy& policy, std::string_view syscall, const SyscallArgs& args) {
  // Refusals first: they take precedence over the unconditional allow they refine.
  for (const Rule& r : policy.rules)
    if (r.syscall == syscall && r.action == Action::kErrno && !r.conds.empty() && matches(r, args))
      return {Action::kErrno, r.err};
  for (const Rule& r : policy.rules)
    if (r.syscall == syscall && r.action == Action::kAllow && matches(r, args))
      return {Action::kAllow, 0};
  for (const Rule& r : policy.rules)
    if (r.syscall == syscall && r.action == Action::kErrno && r.conds.empty())
      return {Action::kErrno, r.err};
  return {Action::kErrno, policy.default_errno};
}

}  // namespace corral::policy::seccomp
