// SPDX-License-Identifier: Apache-2.0
// Init and command setup inside the sandbox (between clone and execve).
#include "sandbox/child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/securebits.h>
#include <sys/socket.h>
#include <sched.h>
#include <signal.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "sandbox/caps.h"
#include "sandbox/job_signals.h"
#include "sandbox/landlock.h"
#include "sandbox/netns.h"
#include "sandbox/session_init.h"
#include "sandbox/sync_channel.h"
#include "sandbox/userns.h"

namespace corral::sandbox::child {
namespace {

constexpr int kSock = 3;
constexpr int kProxyChannel = 4;  // --net proxy: where init keeps the channel to the host proxy
constexpr uid_t kUid = userns::kSandboxUid;
constexpr gid_t kGid = userns::kSandboxGid;  // the sync socket is moved here so close_range can spare it
// Signals a user may send the sandbox (via corral) that init passes to the command.
// A job-control stop from corral (SIGTSTP, SIGTTIN, SIGTTOU: corral itself was stopped) stops
// every process of the sandbox, and SIGCONT resumes them all.
constexpr int kForwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
                              SIGWINCH, SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU};

// The command side runs on spawnCommand's own stack. Under ASan every call to a noreturn
// function (fail, _exit, execCommand) first asks the runtime to clear the shadow of "the rest
// of the stack"; on a stack ASan did not allocate it prints a false-positive warning into the
// command's stderr. These functions touch no heap, so they are left uninstrumented.
#define CORRAL_ON_SPAWN_STACK __attribute__((no_sanitize("address")))

[[noreturn]] CORRAL_ON_SPAWN_STACK void fail(sync::Type type, int32_t step, int err, int exit_code) {
  sync::send(kSock, {type, step, err, 0});
  ::_exit(exit_code);
}

void noopHandler(int) {}

void stamp(const Context& ctx, Milestone m) {
  if (!ctx.stamps) return;
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  ctx.stamps[ctx.stamp_base + m] = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Command side: from the fork to execve. Failures go straight to the parent.
[[noreturn]] CORRAL_ON_SPAWN_STACK void execCommand(const Context& ctx) {
  stamp(ctx, kMsForked);  // here, not in init: init sleeps until the exec (spawnCommand)
  sigset_t none;
  sigemptyset(&none);
  // Handlers reset on exec, but ignored signals and the mask would be inherited.
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction sa{};
    sa.sa_handler = SIG_DFL;
    ::sigaction(sig, &sa, nullptr);
  }
  if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) fail(sync::Type::kExecFailed, sync::kStepSignals, errno, 125);
  // A new session: no controlling terminal to push keystrokes into (CVE-2017-5226).
  if (::setsid() < 0) fail(sync::Type::kExecFailed, sync::kStepSetsid, errno, 125);
  for (int fd = 0; fd <= 2; ++fd)  // a session command's own stdio (session_init.cc)
    if (ctx.cmd_stdio[fd] >= 0 && ::dup2(ctx.cmd_stdio[fd], fd) < 0) fail(sync::Type::kExecFailed, sync::kStepSignals, errno, 125);
  // A session command's own terminal (the sandbox's devpts, made by init) is its controlling
  // one, as a login's is: it is new, so no other session's keystrokes can be pushed into it.
  if (ctx.cmd_tty && ::ioctl(0, TIOCSCTTY, 0) != 0) fail(sync::Type::kExecFailed, sync::kStepSetsid, errno, 125);
  if (::chdir(ctx.cwd ? ctx.cwd : "/workspace") != 0) fail(sync::Type::kExecFailed, sync::kStepChdir, errno, 125);
  if (int e = caps::dropAll()) fail(sync::Type::kExecFailed, sync::kStepCaps, e, 125);
  if (ctx.landlock_abi > 0)
    if (int e = landlock::restrictSelf(ctx.landlock_abi, ctx.kvm_device)) fail(sync::Type::kExecFailed, sync::kStepLandlock, e, 125);
  // After Landlock, which opens a descriptor per rule: --open-files 1..7 made it fail (EMFILE)
  // before the command ran. The limits only lower, which needs no capability.
  if (int e = rlimits::apply(ctx.rlimits)) fail(sync::Type::kExecFailed, sync::kStepRlimits, e, 125);
  // Only stdio crosses exec; the sync socket is close-on-exec so a failed exec can still report.
  if (::syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC) != 0)
    fail(sync::Type::kExecFailed, sync::kStepExec, errno, 125);
  // Seccomp last: every call above is one the filter denies or need not allow.
  stamp(ctx, kMsExec);
  if (ctx.seccomp)
    if (int e = seccomp::install(*ctx.seccomp)) fail(sync::Type::kExecFailed, sync::kStepSeccomp, e, 125);
  int err = ENOENT;
  for (size_t i = 0; i < ctx.exec_path_count; ++i) {
    ::execve(ctx.exec_paths[i], ctx.argv, ctx.envp);
    // Like execvp: keep looking past ENOENT/ENOTDIR, remember EACCES, stop on anything else.
    if (errno == EACCES) err = EACCES;
    else if (errno != ENOENT && errno != ENOTDIR) { err = errno; break; }
  }
  fail(sync::Type::kExecFailed, sync::kStepExec, err, err == ENOENT ? 127 : 126);
}

CORRAL_ON_SPAWN_STACK int commandEntry(void* ctx) { execCommand(*static_cast<const Context*>(ctx)); }

// Starts the command posix_spawn-style: CLONE_VM|CLONE_VFORK shares init's memory instead of
// copying its page tables (init is a clone of corral, several MB mapped), and init sleeps
// until the command has exec'd or died. This is safe because execCommand only makes system
// calls and writes its own stack, errno and the stamp page: no allocation, no lock, nothing
// init reads afterwards. Its signal dispositions, fd table, cwd and credentials are its own
// (no CLONE_SIGHAND/FILES/FS/THREAD). Returns the pid, or -errno.
long spawnCommand(const Context& ctx) {
  constexpr size_t kStackBytes = size_t{256} * 1024;
  void* stack = ::mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return -errno;
  int pid = ::clone(commandEntry, static_cast<char*>(stack) + kStackBytes, CLONE_VM | CLONE_VFORK | SIGCHLD,
                    const_cast<Context*>(&ctx));
  const long result = pid < 0 ? -errno : pid;
  ::munmap(stack, kStackBytes);  // the command has exec'd or exited: nothing runs on it now
  return result;
}

// A process in 'D' (in the kernel: a shell held in vfork() by a stopped child, a slow read)
// stops as it leaves, provided its SIGSTOP is still pending: a SIGCONT from a sibling that was
// still running would have dropped it.
bool stopPending(long pid) {
  char path[64], status[4096];
  std::snprintf(path, sizeof path, "/proc/%ld/status", pid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // gone meanwhile
  const ssize_t n = ::read(fd, status, sizeof status - 1);
  ::close(fd);
  if (n <= 0) return true;
  status[n] = '\0';
  const char* shd = std::strstr(status, "\nShdPnd:");
  if (shd == nullptr) return false;
  const unsigned long long pending = std::strtoull(shd + 9, nullptr, 16);
  return (pending >> (SIGSTOP - 1)) & 1;
}

// Every process of the sandbox but init is stopped ('T'), or cannot run before it stops ('D'
// with the stop pending; a zombie). Read from init's own /proc (the sandbox's pid namespace).
bool everyoneStopped() {
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return true;  // cannot look: the one round sent is all there is
  bool all = true;
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 1) continue;
    char path[64], stat[512];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // gone meanwhile
    const ssize_t n = ::read(fd, stat, sizeof stat - 1);
    ::close(fd);
    if (n <= 0) continue;
    stat[n] = '\0';
    const char* paren = std::strrchr(stat, ')');
    if (paren == nullptr || paren[1] == '\0' || paren[2] == '\0') continue;
    const char state = paren[2];
    if ((state != 'T' && state != 't' && state != 'D' && state != 'Z' && state != 'X') ||
        (state == 'D' && !stopPending(pid))) {
      all = false;
      break;
    }
  }
  ::closedir(dir);
  return all;
}

// A job-control stop of the whole sandbox. kill(-1) signals one process at a time, so one not
// signalled yet can SIGCONT one already stopped (a SIGCONT also drops a pending SIGSTOP): a
// pair of processes doing that kept running while corral was stopped. A stopped process
// sends nothing, so rounds until every process is seen stopped converge. One scan is not
// proof: a process seen stopped can be continued by one scanned later, which then stops on
// its own pending SIGSTOP; the one it continued has no stop pending and runs, so a second
// scan sees it.
void stopEverything() {
  for (int round = 0; round < 1000; ++round) {
    ::kill(-1, SIGSTOP);
    if (everyoneStopped() && everyoneStopped()) return;
    const timespec pause{0, 100'000};  // let the signalled ones reach their stop
    ::nanosleep(&pause, nullptr);
  }
}

// Reaps everything; returns when the command has exited and nothing else is left.
// With --net proxy, init also hands each connection to its loopback listener to the host
// (netns::relayPending); signals then arrive through a signalfd polled beside it.
int superviseCommand(pid_t command, const sigset_t& waited, int proxy_listen) {
  int command_status = 0;
  bool command_done = false;
  bool job_stopped = false;  // stopped by corral's job control, not yet continued
  const int sigfd = proxy_listen >= 0 ? ::signalfd(-1, &waited, SFD_CLOEXEC | SFD_NONBLOCK) : -1;
  if (proxy_listen >= 0 && sigfd < 0) {
    ::kill(command, SIGKILL);  // cannot supervise both: refuse to run half-wired
  }
  for (;;) {
    int sig;
    if (sigfd >= 0) {
      pollfd fds[2] = {{sigfd, POLLIN, 0}, {proxy_listen, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) continue;
      if (fds[1].revents & POLLIN) netns::relayPending(proxy_listen, kProxyChannel);
      if (!(fds[0].revents & POLLIN)) continue;
      signalfd_siginfo si;
      if (::read(sigfd, &si, sizeof si) != static_cast<ssize_t>(sizeof si)) continue;
      sig = static_cast<int>(si.ssi_signo);
    } else {
      siginfo_t info;
      sig = ::sigwaitinfo(&waited, &info);
      if (sig < 0) continue;
    }
    // kill(-1) from a pid namespace's init reaches every process in it but init.
    if (isJobStop(sig)) {
      stopEverything();
      job_stopped = true;
      continue;
    }
    if (sig == SIGCONT && job_stopped) {  // the job resumes; any other SIGCONT is the command's own
      ::kill(-1, SIGCONT);
      job_stopped = false;
      continue;
    }
    if (sig != SIGCHLD) {
      // The command leads its own process group (setsid); fall back to the pid alone.
      if (!command_done && ::kill(-command, sig) != 0) ::kill(command, sig);
      continue;
    }
    int status;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (pid == command) {
        command_status = status;
        command_done = true;
      }
    }
    if (command_done) {
      // The command is gone: nothing it left behind may outlive it.
      ::kill(-1, SIGKILL);
      while (::waitpid(-1, &status, 0) > 0 || errno == EINTR) {
      }
      return command_status;
    }
  }
}

}  // namespace

long spawnSessionCommand(const Context& ctx) { return spawnCommand(ctx); }

void runInit(const Context& ctx) {
  // If corral dies, so does the sandbox: init's death tears down the whole pid namespace.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Out of corral's process group: a terminal's Ctrl-C goes to that whole group, and init (which
  // handles SIGINT to forward it) got it directly as well as forwarded by corral, so the command
  // saw one Ctrl-C twice (2 launches in 5 here). Signals reach init through corral only.
  ::setpgid(0, 0);
  // One that reached the group before this is pending here (init inherits corral's mask, which
  // blocks them), and corral has its own copy to forward: init's copy is dropped. What corral
  // has already forwarded (marked kForwardedByCorral) is kept: on a busy machine init may run
  // its first instruction after corral sent "go" and a signal (a background job's SIGTTIN was
  // lost so, and the sandbox ran on while corral stopped). Init handles them later.
  sigset_t forwarded;
  sigemptyset(&forwarded);
  for (int sig : kForwarded) sigaddset(&forwarded, sig);
  int keep[std::size(kForwarded)];
  size_t kept = 0;
  const timespec now{0, 0};
  siginfo_t si;
  for (int sig; (sig = ::sigtimedwait(&forwarded, &si, &now)) > 0;)
    if (si.si_code == SI_QUEUE && si.si_value.sival_int == kForwardedByCorral && kept < std::size(keep)) keep[kept++] = sig;
  for (size_t i = 0; i < kept; ++i) ::kill(::getpid(), keep[i]);  // pending again, still blocked
  // cgroup v1 has no CLONE_INTO_CGROUP: init moves itself in through files the parent
  // opened, before it runs anything else, so no untrusted code ever runs outside the cgroup.
  // (A thread moving itself skips the global lock a parent-side attach waits on: ~0.05 ms
  // instead of an RCU grace period.) Before close_range, which would close those files.
  if (ctx.cgroup) {
    if (int e = ctx.cgroup->attachSelf()) {
      sync::send(ctx.sock, {sync::Type::kSetupFailed, sync::kStepCgroupAttach, e, 0});
      ::_exit(125);
    }
  }
  // The caller's replacement stdio (all >= 3, checked by the parent) goes onto 0..2 before
  // the sync socket takes fd 3 and close_range drops everything above it.
  for (int fd = 0; fd <= 2; ++fd)
    if (ctx.stdio[fd] >= 0 && ::dup2(ctx.stdio[fd], fd) < 0) ::_exit(125);
  // The proxy channel goes out of the way first (fd 10+), so placing the sync socket on 3
  // cannot clobber it, then onto its own fixed number.
  int proxy_tmp = -1;
  if (ctx.proxy_channel >= 0 && (proxy_tmp = ::fcntl(ctx.proxy_channel, F_DUPFD_CLOEXEC, 10)) < 0) ::_exit(125);
  if (ctx.sock != kSock) {
    if (::dup3(ctx.sock, kSock, O_CLOEXEC) < 0) ::_exit(125);
  } else if (::fcntl(kSock, F_SETFD, FD_CLOEXEC) != 0) {
    ::_exit(125);
  }
  if (proxy_tmp >= 0 && ::dup3(proxy_tmp, kProxyChannel, O_CLOEXEC) < 0) ::_exit(125);
  // Nothing the caller held (a directory fd, a socket) may reach the sandbox (CVE-2024-21626).
  if (::syscall(SYS_close_range, proxy_tmp >= 0 ? kProxyChannel + 1 : kSock + 1, ~0u, 0) != 0) ::_exit(125);

  // The network namespace is made on the other CPU from here on (netns.h), while the parent
  // writes the id maps and init builds the mounts. After close_range, which would close the
  // helper's fds too (it shares init's table).
  netns::Maker net;
  if (int e = netns::startMaker(&net, ctx.caller_cpus_known ? &ctx.caller_cpus : nullptr)) fail(sync::Type::kSetupFailed, sync::kStepNetns, e, 125);

  // While the parent writes the id maps: the plan's first steps need no mapped uid (mountns.h).
  size_t failed = 0;
  const size_t before_maps = ctx.mounts->before_maps;
  if (int e = mountns::execute(*ctx.mounts, 0, before_maps, -1, ctx.slot_fds, &failed, ctx.stamps, {}))
    fail(sync::Type::kSetupFailed, static_cast<int32_t>(failed), e, 125);

  sync::Message m{};
  if (sync::recv(kSock, &m) != 0 || m.type != sync::Type::kMapsReady) ::_exit(125);  // parent gone: EOF
  stamp(ctx, kMsMapsReady);
  // Become the mapped sandbox uid. A root caller's clone still holds host kuid 0, which has
  // no mapping here (files could not even be created); a rootless caller already maps to it.
  // NO_SETUID_FIXUP keeps init's namespace capabilities across the switch.
  // Raw syscalls, not glibc's wrappers: in a threaded caller (the runner's output reader) the
  // wrappers broadcast the change to every thread glibc believes exists, and in this clone
  // those threads do not, so the broadcast would wait for them forever.
  if (::prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP) != 0 || ::syscall(SYS_setresgid, kGid, kGid, kGid) != 0 ||
      ::syscall(SYS_setresuid, kUid, kUid, kUid) != 0)
    fail(sync::Type::kSetupFailed, sync::kStepCredentials, errno, 125);
  // A credential change clears the parent-death signal: arm it again, then make sure the
  // parent did not die in between (its end of the socket would read as EOF).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  {
    char probe;
    if (::recv(kSock, &probe, 1, MSG_PEEK | MSG_DONTWAIT) == 0) ::_exit(125);
  }
  // Non-dumpable: the command cannot ptrace init or read /proc/1/{environ,mem,fd,root}.
  if (::prctl(PR_SET_DUMPABLE, 0) != 0) fail(sync::Type::kSetupFailed, sync::kStepDumpable, errno, 125);

  int ws = mountns::makeDetachedTmpfs(ctx.workspace_size);
  if (ws < 0) fail(sync::Type::kSetupFailed, sync::kStepWorkspaceTmpfs, -ws, 125);
  if (ctx.send_workspace)
    if (int e = sync::send(kSock, {sync::Type::kWorkspaceFd, 0, 0, 0}, ws))
      fail(sync::Type::kSetupFailed, sync::kStepSync, e, 125);
  stamp(ctx, kMsTmpfs);
  const mountns::Callback join{[](void* maker) { return netns::joinMaker(static_cast<netns::Maker*>(maker)); }, &net};
  if (int e = mountns::execute(*ctx.mounts, before_maps, ctx.mounts->steps.size(), ws, ctx.slot_fds, &failed,
                               ctx.stamps, join))
    fail(sync::Type::kSetupFailed, static_cast<int32_t>(failed), e, 125);
  // Fail closed should a plan ever lack its join step: the command must not start in the
  // caller's network namespace (joinMaker resets the maker).
  if (net.pid != -1) fail(sync::Type::kSetupFailed, sync::kStepNetns, EINVAL, 125);
  ::close(ws);
  stamp(ctx, kMsMounts);
  if (::sethostname("corral", 6) != 0) fail(sync::Type::kSetupFailed, sync::kStepHostname, errno, 125);
  int proxy_listen = -1;
  if (ctx.proxy_channel >= 0) {
    proxy_listen = netns::listenLoopback(ctx.proxy_port);
    if (proxy_listen < 0) fail(sync::Type::kSetupFailed, sync::kStepLoopback, -proxy_listen, 125);
  }
  stamp(ctx, kMsNetwork);

  if (ctx.wait_for_go && (sync::recv(kSock, &m) != 0 || m.type != sync::Type::kGo)) ::_exit(125);
  // Rooted at the cgroup the parent just placed us in, so /proc/self/cgroup shows "/".
  if (::unshare(CLONE_NEWCGROUP) != 0) fail(sync::Type::kSetupFailed, sync::kStepCgroupNs, errno, 125);

  // Signals init forwards need a handler: pid 1 drops default-action signals from outside.
  sigset_t waited;
  sigemptyset(&waited);
  sigaddset(&waited, SIGCHLD);
  for (int sig : kForwarded) {
    struct sigaction sa{};
    sa.sa_handler = noopHandler;
    ::sigaction(sig, &sa, nullptr);
    sigaddset(&waited, sig);
  }
  ::sigprocmask(SIG_BLOCK, &waited, nullptr);

  if (ctx.session) session::serve(ctx, waited, proxy_listen);

  const long pid = spawnCommand(ctx);
  if (pid < 0) fail(sync::Type::kSetupFailed, sync::kStepFork, static_cast<int>(-pid), 125);

  // Init keeps nothing the command could use: no capabilities, no stdio.
  caps::dropAll();
  ::syscall(SYS_close_range, 0u, 2u, 0);
  int status = superviseCommand(static_cast<pid_t>(pid), waited, proxy_listen);
  stamp(ctx, kMsCommandReaped);
  sync::send(kSock, {sync::Type::kCommandExited, 0, 0, status});
  stamp(ctx, kMsReported);
  ::_exit(0);
}

}  // namespace corral::sandbox::child
