// SPDX-License-Identifier: Apache-2.0
// Launch order, parent side: plan everything, clone, map ids, stage, go, wait, copy back.
#include "sandbox/linux_backend.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>

#include "base/random_id.h"
#include "base/unique_fd.h"
#include "sandbox/cgroup.h"
#include "sandbox/child.h"
#include "sandbox/cpu_placement.h"
#include "sandbox/host_facilities.h"
#include "sandbox/job_signals.h"
#include "sandbox/landlock.h"
#include "sandbox/launch_timing.h"
#include "sandbox/limit_plan.h"
#include "sandbox/seccomp_embedded.h"
#include "sandbox/stdio_relay.h"
#include "sandbox/sync_channel.h"
#include "sandbox/userns.h"
#include "sandbox/workspace.h"

extern char** environ;

namespace corral::sandbox {
namespace {

int g_argc = 0;
char** g_argv = nullptr;

using Clock = std::chrono::steady_clock;
using timing::Timing;
using timing::nowNs;
using timing::printMilestones;
using timing::printStepTimes;

struct CloneArgs {  // struct clone_args (linux/sched.h), declared here to avoid header clashes
  uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};
constexpr uint64_t kCloneIntoCgroup = 0x200000000ULL;

// The job-control stops (SIGTSTP, SIGTTIN, SIGTTOU) are forwarded too: the sandbox left
// corral's process group, so a Ctrl-Z (or a read of the terminal in the background) stopped
// corral alone and the command ran on unsupervised, past its deadline. Corral now stops the
// whole sandbox, then itself; SIGCONT (fg, bg) resumes both.
constexpr int kForwardedSignals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
                                     SIGWINCH, SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU};

// Zeroes the strings behind /proc/self/cmdline and /proc/self/environ (child side).
void scrubProcessStrings() {
  for (int i = 0; i < g_argc && g_argv[i]; ++i) ::memset(g_argv[i], 0, ::strlen(g_argv[i]));
  for (char** e = environ; e && *e; ++e) ::memset(*e, 0, ::strlen(*e));
  if (g_argc > 0 && g_argv[0]) {
    static const char kName[] = "corral-init";
    // argv[0] of the original command line is "corral" or a path to it: at least 6 bytes.
    size_t room = ::strlen("corral");
    ::memcpy(g_argv[0], kName, room < sizeof(kName) ? room : sizeof(kName));
  }
}

std::string passwdFile() {
  return "root:x:0:0:root:/root:/usr/sbin/nologin\ncorral:x:1000:1000:corral:/workspace:/bin/sh\n"
         "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
}
std::string groupFile() { return "root:x:0:\ncorral:x:1000:\nnogroup:x:65534:\n"; }

}  // namespace

std::vector<std::string> execCandidates(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  const std::string& cmd = argv.front();
  if (cmd.find('/') != std::string::npos) return {cmd};
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const std::string& kv : env)
    if (kv.rfind("PATH=", 0) == 0) path = kv.substr(5);
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    out.push_back((dir.empty() ? "." : dir) + "/" + cmd);
    start = end + 1;
  }
  return out;
}

namespace {

std::vector<char*> cArray(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const std::string& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}



struct Outcome {
  std::optional<int> status;      // the command's wait status, from init
  std::optional<sync::Message> setup_failure;
  std::optional<sync::Message> exec_failure;
  bool timed_out = false;
};

// Blocks the forwarded signals for the parent's lifetime in this call and reads them from
// a signalfd; restores the mask on destruction.
class SignalForwarder {
 public:
  SignalForwarder() {
    sigemptyset(&set_);
    for (int s : kForwardedSignals) sigaddset(&set_, s);
    ::sigprocmask(SIG_BLOCK, &set_, &old_);
    fd_.reset(::signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK));
  }
  ~SignalForwarder() { ::sigprocmask(SIG_SETMASK, &old_, nullptr); }
  SignalForwarder(const SignalForwarder&) = delete;
  SignalForwarder& operator=(const SignalForwarder&) = delete;
  int fd() const { return fd_.get(); }

 private:
  sigset_t set_, old_;
  UniqueFd fd_;
};

Error setupError(const sync::Message& m, const mountns::Plan& plan, const SandboxSpec& spec) {
  std::string what;
  if (m.step >= 0 && static_cast<size_t>(m.step) < plan.steps.size()) {
    const mountns::Step& s = plan.steps[static_cast<size_t>(m.step)];
    what = s.what;
    // Host sources are named as they are; paths in the new root without its staging prefix.
    const bool host_path = s.op == mountns::Op::kCloneTree || s.op == mountns::Op::kCheckReach;
    if (s.a) {
      std::string path = s.a;
      if (!host_path && path.rfind(plan.root + "/", 0) == 0) path = path.substr(plan.root.size());
      what += std::string(" (") + path + ")";
    }
    // The path to an --ro-bind source is walked as the caller's uid, but without its
    // capabilities (init is already in the sandbox's user namespace): say so, and what to do.
    if (m.err == EACCES && s.op == mountns::Op::kCloneTree && std::string_view(s.what).find("--ro-bind") != std::string_view::npos)
      return Error(m.err, "sandbox setup: " + what + " (corral walks an --ro-bind path as the caller's uid without its "
                              "capabilities: every directory on the way must let that uid search it)");
  } else if (m.step == sync::kStepExec) {
    what = "exec " + spec.argv.front();
  } else {
    what = sync::childStepName(m.step);
  }
  // corral's own writes (the generated /etc) are held to the caller's RLIMIT_FSIZE.
  if (m.err == EFBIG)
    return Error(Errc::kLimit, "sandbox setup: " + what + ": file too large (corral's own file-size limit, ulimit -f?)");
  return Error(m.err, "sandbox setup: " + what);
}

}  // namespace

void rememberProcessArgs(int argc, char** argv) {
  g_argc = argc;
  g_argv = argv;
}

Result<RunReport> runLinux(const SandboxSpec& spec, const RunOptions& options) {
  Timing timing;
  timing.mark("start");
  const auto started = Clock::now();
  if (spec.argv.empty()) return Error(Errc::kInvalidArgument, "no command given");
  // stdio is the one thing of the caller's that crosses into the sandbox. A directory there
  // would be a handle on the host's tree (the runc CVE-2024-21626 pattern through fd 0-2).
  const int given_stdio[3] = {spec.stdio.in, spec.stdio.out, spec.stdio.err};
  for (int fd = 0; fd <= 2; ++fd) {
    const char* name = fd == 0 ? "stdin" : fd == 1 ? "stdout" : "stderr";
    const int src = given_stdio[fd] >= 0 ? given_stdio[fd] : fd;
    // init moves a given fd onto 0..2 before fd 3 becomes its sync socket: only 3+ is safe.
    if (given_stdio[fd] >= 0 && given_stdio[fd] < 3)
      return Error(Errc::kInvalidArgument, std::string(name) + " replacement must be fd 3 or above");
    struct stat st;
    if (::fstat(src, &st) == 0 && S_ISDIR(st.st_mode))
      return Error(Errc::kRefused, std::string(name) + " is a directory: refusing to hand a host directory to the sandbox");
  }

  if (spec.proxy.channel >= 0) {
    int type = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(spec.proxy.channel, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET)
      return Error(Errc::kInvalidArgument, "proxy channel must be a UNIX SOCK_SEQPACKET socket");
  }

  // ---- Plan everything before clone: the child only executes. ----
  cgroup::HostCgroups host_cgroups;
  if (spec.limits.memory_bytes) host_cgroups = cgroup::detect();
  ASSIGN_OR_RETURN(LimitDecision limits, planLimits(spec.limits, host_cgroups));
  RETURN_IF_ERROR(rlimits::fitUnderHardLimits(limits.rlimits));
  const seccomp::Program& filter = seccomp::embeddedProgram();
  const int landlock_abi = landlock::abiVersion();
  ASSIGN_OR_RETURN(mountns::Plan mounts, mountns::buildPlan(spec, passwdFile(), groupFile()));
  std::vector<int> slot_fds(static_cast<size_t>(mounts.slots), -1);
  const std::vector<std::string> exec_paths = execCandidates(spec.argv, spec.env);
  std::vector<const char*> exec_cpaths;
  exec_cpaths.reserve(exec_paths.size());
  for (const std::string& p : exec_paths) exec_cpaths.push_back(p.c_str());
  std::vector<char*> argv = cArray(spec.argv);
  std::vector<char*> envp = cArray(spec.env);
  const std::string ws_size = "size=" + std::to_string(spec.limits.workspace_bytes);
  timing.mark("plan");

  std::optional<cgroup::Cgroup> cg;
  if (limits.need_cgroup) {
    cgroup::reapStale(host_cgroups);
    ASSIGN_OR_RETURN(cgroup::Cgroup created, cgroup::create(limits.cgroup, host_cgroups, randomHex16()));
    cg.emplace(std::move(created));
  }
  timing.mark("cgroup");

  // Caller stdio the sandbox could use to change or reopen a host inode (a terminal, a file,
  // a pipe) goes through pipes instead (stdio_relay.h).
  ASSIGN_OR_RETURN(StdioRelay relay, StdioRelay::plan(given_stdio, spec.limits.file_size_bytes));

  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return sysError("socketpair");
  UniqueFd sock(pair[0]), child_sock(pair[1]);

  const bool send_workspace = spec.workspace.has_value() || !spec.outputs.empty() || options.session != nullptr;
  const bool self_attach = cg && cg->cloneIntoFd() < 0;
  child::Context ctx;
  ctx.sock = child_sock.get();
  for (int fd = 0; fd <= 2; ++fd) ctx.stdio[fd] = relay.sandboxFd(fd) >= 0 ? relay.sandboxFd(fd) : given_stdio[fd];
  ctx.proxy_channel = spec.proxy.channel;
  ctx.proxy_port = spec.proxy.port;
  ctx.mounts = &mounts;
  ctx.slot_fds = slot_fds.data();
  ctx.workspace_size = ws_size.c_str();
  ctx.send_workspace = send_workspace;
  ctx.wait_for_go = send_workspace || options.before_command != nullptr;
  ctx.session = options.session != nullptr;
  ctx.cgroup = self_attach ? &*cg : nullptr;
  ctx.argv = argv.data();
  ctx.envp = envp.data();
  ctx.exec_paths = exec_cpaths.data();
  ctx.exec_path_count = exec_cpaths.size();
  ctx.rlimits = limits.rlimits;
  ctx.seccomp = &filter;
  ctx.landlock_abi = landlock_abi;
  ctx.kvm_device = spec.kvm_device.has_value();
  ctx.caller_cpus_known = ::sched_getaffinity(0, sizeof ctx.caller_cpus, &ctx.caller_cpus) == 0;

  // A root caller's supplementary groups (gid 0 among them) would follow the clone and
  // grant group access on host files; drop them here, where root still may.
  // uid 0 of a user namespace that denies setgroups (`unshare -r`) can neither do this nor
  // map the sandbox to an unprivileged uid it does not have: say so and what works instead.
  if (::getuid() == 0 && ::setgroups(0, nullptr) != 0) {
    if (errno == EPERM && userns::setgroupsDenied())
      return Error(EPERM, "setgroups: corral is uid 0 of a user namespace that denies it (as under "
                          "`unshare --map-root-user`); run corral as another uid there");
    return sysError("setgroups");
  }
  // --timing: the init stamps each mount step into a page shared across the clone.
  uint64_t* stamps = nullptr;
  const size_t stamp_bytes = (mounts.steps.size() + child::kMilestones + 1) * sizeof(uint64_t);
  if (options.timing) {
    void* page = ::mmap(nullptr, stamp_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page != MAP_FAILED) stamps = static_cast<uint64_t*>(page);
    ctx.stamps = stamps;
    ctx.stamp_base = mounts.steps.size();
  }
  SignalForwarder forwarder;
  int pidfd = -1;
  CloneArgs args{};
  // No CLONE_NEWNET or CLONE_NEWIPC: init makes those on the other CPU (netns.h says why).
  args.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  if (cg && cg->cloneIntoFd() >= 0) {
    // cgroup v2: born inside its cgroup, so no untrusted instruction runs outside it.
    args.flags |= kCloneIntoCgroup;
    args.cgroup = static_cast<uint64_t>(cg->cloneIntoFd());
  }
  long pid = ::syscall(SYS_clone3, &args, sizeof(args));
  if (pid < 0) {
    int err = errno;
    if (err == EPERM || err == ENOSPC || err == EINVAL)
      return Error(err, "clone3 (user, mount, pid, uts namespaces): user namespaces unavailable? run `corral doctor`");
    if (err == ENOSYS && kernelAtLeast(5, 5)) return Error(err, "clone3 refused (ENOSYS): " + seccompBlockHint());
    return sysError("clone3", err);
  }
  if (pid == 0) {
    scrubProcessStrings();
    child::runInit(ctx);
  }
  // Init's first steps (mountns.h, before_maps) and our writing of its id maps run side by
  // side only on two CPUs, and the scheduler tends to start init on ours. Init's mask is ours,
  // read into the context before the clone.
  if (ctx.caller_cpus_known) placement::nudgeOffMyCpu(static_cast<pid_t>(pid), ctx.caller_cpus);
  const uint64_t cloned_ns = nowNs();
  UniqueFd child_pidfd(pidfd);
  child_sock.reset();
  relay.closeSandboxEnds();
  timing.mark("clone");

  // From here on, any early return must not leave the init running: killing it tears down
  // the whole pid namespace.
  struct Reaper {
    pid_t pid;
    int pidfd;
    bool armed = true;
    ~Reaper() {
      // cppcheck-suppress knownConditionTrueFalse ; cppcheck misses `reaper.armed = false` below
      if (!armed) return;
      ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
      ::waitpid(pid, nullptr, 0);
    }
  } reaper{static_cast<pid_t>(pid), child_pidfd.get()};

  {
    // Init runs the plan's first steps while the maps are written (mountns.h, before_maps): if
    // one failed, init reported why and exited, and that report, not the broken pipe or the
    // vanished /proc entry it leaves here, is the error to show.
    auto initsReport = [&](Error fallback) -> Error {
      sync::Message m{};
      if (sync::recv(sock.get(), &m, nullptr, MSG_DONTWAIT) == 0 && m.type == sync::Type::kSetupFailed)
        return setupError(m, mounts, spec);
      return fallback;
    };
    UniqueFd proc_dir(::open(("/proc/" + std::to_string(pid)).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!proc_dir.valid()) return initsReport(sysError("open /proc/<child>"));
    if (auto r = userns::writeIdMaps(proc_dir.get(), userns::planIdMap(::getuid(), ::getgid())); !r.ok())
      return initsReport(r.error());
    if (int e = sync::send(sock.get(), {sync::Type::kMapsReady, 0, 0, 0})) return initsReport(sysError("sync: maps ready", e));
  }
  timing.mark("idmap");

  Outcome out;
  UniqueFd ws_root;
  // The host workspace, opened once for staging and copy-back; only now, so that init (a
  // clone of this process) never held it.
  UniqueFd host_ws;
  if (spec.workspace) {
    auto opened = workspace::openHostDir(*spec.workspace);
    if (!opened) return opened.error();
    host_ws = std::move(*opened);
  }
  if (send_workspace) {
    sync::Message m{};
    int fd = -1;
    if (int e = sync::recv(sock.get(), &m, &fd)) return sysError("sync: waiting for the sandbox", e);
    if (m.type == sync::Type::kSetupFailed) return setupError(m, mounts, spec);
    if (m.type != sync::Type::kWorkspaceFd || fd < 0) return Error(Errc::kIo, "sync: unexpected message from sandbox");
    ws_root.reset(fd);
    if (spec.workspace) {
      const uid_t me = ::getuid();
      const userns::IdMapPlan ids = userns::planIdMap(me, ::getgid());
      ASSIGN_OR_RETURN(auto stats, workspace::stage(host_ws.get(), ws_root.get(), {ids.host_uid, ids.host_gid, me == 0},
                                                         spec.stage_only ? &*spec.stage_only : nullptr));
      (void)stats;
    }
  }
  if (ctx.wait_for_go) {
    // Init builds the sandbox meanwhile, and waits for go before it starts the command.
    if (options.before_command) RETURN_IF_ERROR(options.before_command(forwarder.fd()));
    if (int e = sync::send(sock.get(), {sync::Type::kGo, 0, 0, 0})) {
      // Init failed its setup while the hook waited, and is gone: its report is in the socket.
      sync::Message m{};
      if (sync::recv(sock.get(), &m, nullptr, MSG_PEEK | MSG_DONTWAIT) == 0 && m.type == sync::Type::kSetupFailed)
        return setupError(m, mounts, spec);
      return sysError("sync: go", e);
    }
  }
  timing.mark("stage");
  if (options.session) {
    options.session({sock.get(), child_pidfd.get(), ws_root.get(), forwarder.fd()});
    ::syscall(SYS_pidfd_send_signal, child_pidfd.get(), SIGKILL, nullptr, 0);  // the session ends here
  }

  UniqueFd timer;
  if (spec.limits.timeout) {
    timer.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
    itimerspec its{};
    auto ms = spec.limits.timeout->count();
    its.it_value.tv_sec = ms / 1000;
    its.it_value.tv_nsec = (ms % 1000) * 1'000'000;
    if (!timer.valid() || ::timerfd_settime(timer.get(), 0, &its, nullptr) != 0) return sysError("timerfd");
  }

  // ---- Supervise: signals to forward, the deadline, and init's exit. ----
  // Init's messages (its command's status, a setup or exec failure) are not read as they come:
  // each one is followed by init's exit, and they wait in the socket until then (the drain
  // below). So this process wakes once, when init is gone, instead of once for the status and
  // again for the exit, each a wake-up of an idle CPU that a virtual machine pays dearly for.
  // (Polling the socket also spun once init closed it: 1-3 ms per launch, session 8.)
  RETURN_IF_ERROR(relay.startOutput());
  bool init_exited = false;
  while (!init_exited) {
    // A negative fd (no timer) is ignored by poll.
    enum { kInit, kSignals, kTimer, kRelay };
    std::vector<pollfd> fds = {{child_pidfd.get(), POLLIN, 0}, {forwarder.fd(), POLLIN, 0}, {timer.get(), POLLIN, 0}};
    relay.addPollFds(fds);
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return sysError("poll");
    }
    relay.onReady(fds, kRelay);
    bool stop_now = relay.takeBackgroundRead();  // the terminal is another job's: as SIGTTIN would
    if (stop_now) forwardToInit(child_pidfd.get(), SIGTTIN);
    if (fds[kSignals].revents & POLLIN) {
      signalfd_siginfo si;
      while (::read(forwarder.fd(), &si, sizeof(si)) == sizeof(si)) {
        forwardToInit(child_pidfd.get(), static_cast<int>(si.ssi_signo));
        stop_now = stop_now || isJobStop(static_cast<int>(si.ssi_signo));
      }
    }
    // Init has been told to stop every process of the sandbox; corral stops now too, as the
    // shell expects of its job. SIGCONT resumes it here, and init resumes the sandbox when
    // corral forwards that SIGCONT (next round). A deadline that passed meanwhile fires then.
    if (stop_now) ::kill(::getpid(), SIGSTOP);
    if (timer.valid() && (fds[kTimer].revents & POLLIN)) {
      out.timed_out = true;
      ::syscall(SYS_pidfd_send_signal, child_pidfd.get(), SIGKILL, nullptr, 0);
      timer.reset();
    }
    if (fds[kInit].revents & POLLIN) init_exited = true;
  }
  // Everything init sent, now that it is gone.
  // (Also when init went with our go unread: sync::recv reads past that reset.)
  for (sync::Message m{}; sync::recv(sock.get(), &m, nullptr, MSG_DONTWAIT) == 0;) {
    if (m.type == sync::Type::kSetupFailed) out.setup_failure = m;
    else if (m.type == sync::Type::kExecFailed) out.exec_failure = m;
    else if (m.type == sync::Type::kCommandExited) out.status = m.status;
  }
  rusage ru{};
  int init_status = 0;
  // The sandbox's last output, before anything corral prints. A caller who does not take it
  // holds corral only as long as it would have held a command writing to its own pipe: past
  // a --timeout, for a second more.
  relay.drain(forwarder.fd(), out.timed_out ? 1000 : -1);
  while (::wait4(static_cast<pid_t>(pid), &init_status, 0, &ru) < 0 && errno == EINTR) {
  }
  // cppcheck-suppress unreadVariable ; read by ~Reaper, which cppcheck does not follow
  reaper.armed = false;
  const uint64_t reaped_ns = nowNs();
  timing.mark("run");

  RunReport report;
  report.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  report.cpu_user_ms = static_cast<double>(ru.ru_utime.tv_sec) * 1e3 + static_cast<double>(ru.ru_utime.tv_usec) / 1e3;
  report.cpu_sys_ms = static_cast<double>(ru.ru_stime.tv_sec) * 1e3 + static_cast<double>(ru.ru_stime.tv_usec) / 1e3;
  report.peak_memory_bytes = static_cast<uint64_t>(ru.ru_maxrss) * 1024;
  report.landlock_abi = landlock_abi;
  report.limits = limits.uses;
  report.cgroup = cg ? cgroup::versionName(cg->version()) : "none";
  bool oom = false;
  if (cg) {
    cgroup::Stats st = cg->stats();
    if (st.peak_memory_bytes) report.peak_memory_bytes = st.peak_memory_bytes;
    oom = st.oom_killed;
    cg->killAll();
  }

  if (out.setup_failure) return setupError(*out.setup_failure, mounts, spec);
  if (out.exec_failure && out.exec_failure->step != sync::kStepExec) return setupError(*out.exec_failure, mounts, spec);
  if (out.exec_failure) {
    report.error = setupError(*out.exec_failure, mounts, spec).message().substr(std::strlen("sandbox setup: "));
    report.exit_code = out.exec_failure->err == ENOENT ? 127 : 126;
    report.command_status = report.exit_code;
    return report;
  }
  if (out.timed_out) {
    report.killed_by = KilledBy::kTimeout;
    report.signal = SIGKILL;
    report.exit_code = 124;
  } else if (out.status && WIFEXITED(*out.status)) {
    report.command_status = WEXITSTATUS(*out.status);
    report.exit_code = *report.command_status;
  } else {
    int sig = out.status && WIFSIGNALED(*out.status) ? WTERMSIG(*out.status) : SIGKILL;
    report.signal = sig;
    report.exit_code = 128 + sig;
    if (oom) report.killed_by = KilledBy::kMemory;
    else if (sig == SIGXCPU || (sig == SIGKILL && spec.limits.cpu_time && report.cpu_user_ms + report.cpu_sys_ms >=
                                                                            static_cast<double>(spec.limits.cpu_time->count())))
      report.killed_by = KilledBy::kCpuTime;
    else report.killed_by = KilledBy::kSignal;
  }

  if (options.after_command && out.status && WIFEXITED(*out.status) && ws_root.valid()) options.after_command(ws_root.get());
  if (!spec.outputs.empty()) {
    if (out.status && WIFEXITED(*out.status) && spec.workspace) {
      report.outputs = workspace::copyBack(ws_root.get(), host_ws.get(), spec.outputs);
    } else {
      for (const std::string& o : spec.outputs)
        report.outputs.push_back({o, OutputResult::Status::kMissing, "not copied: the command did not exit normally", 0});
    }
    for (const OutputResult& o : report.outputs)
      if (o.status == OutputResult::Status::kRefused) {
        report.error = "--output " + o.path + ": refused: " + o.reason;
        report.exit_code = 125;
        break;
      }
  }
  timing.mark("copyback");
  if (options.timing) {
    timing.print();
    if (stamps) {
      printStepTimes(mounts, stamps);
      printMilestones(stamps + mounts.steps.size(), cloned_ns, reaped_ns);
      ::munmap(stamps, stamp_bytes);
    }
  }
  return report;
}

}  // namespace corral::sandbox
