// SPDX-License-Identifier: Apache-2.0
// The launcher's side of a proxy process (cli/egress_process.h): start it, wait until it
// serves, stop it and read its events file for the report.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "base/raw_syscall.h"
#include "cli/egress_process.h"
#include "cli/exec_options.h"
#include "cli/launcher.h"
#include "cli/ssh_agent_exposure.h"
#include "sandbox/cpu_placement.h"
#include "sandbox/job_signals.h"
#include "net/lease_spec.h"
#include "policy/egress_grant.h"

extern char** environ;

namespace corral::cli {
namespace {

// Neither a start nor a stop takes long (corral-core starts in a few ms, a stop closes what
// is open); past this the proxy is taken as hung, and the run as failed.
constexpr int kProxyWaitMs = 10'000;

constexpr int kControlFd = kEgressControlFd;
constexpr int kChannelFd = kEgressChannelFd;
constexpr int kEventsFd = kEgressEventsFd;
// In the child only, until its execve: closed by a successful exec (close-on-exec), or given
// the errno of a failed one. The launcher reads it before the command may start (ready()).
constexpr int kExecStatusFd = 6;

constexpr size_t kChildStackBytes = size_t{64} * 1024;

// What the child needs, in the parent's memory (it shares it until its execve).
struct ChildArgs {
  const char* path;
  char* const* argv;
  char* const* envp;
  int devnull, ctl, chan, events;  // all above kExecStatusFd
  int exec_status;          // a pipe's write end, above kExecStatusFd too
  int agent;                // --ssh-key's listener, above kExecStatusFd; -1: none
  bool restore_policy;      // placement::QuietBirth was active at the clone
};

// The child, from clone to execve: it shares the launcher's memory (CLONE_VM: no page tables
// copied, and the launcher goes on at once instead of waiting for the exec, as posix_spawn's
// vfork would, 0.3-2 ms here), so it makes raw system calls only (base/raw_syscall.h) and
// writes nothing but its own stack. Stdin and stdout are /dev/null (the command owns the
// caller's), stderr is shared for the proxy's log lines; only the control socket, the
// channel and the events file cross besides, on fixed numbers. It dies with the launcher (PR_SET_PDEATHSIG; the
// proxy checks its parent is still the launcher, closing the race), with the caller's
// signal mask cleared. A failed exec writes its errno to kExecStatusFd and exits 127.
CORRAL_ON_OWN_STACK int childEntry(void* arg) {
  const ChildArgs& a = *static_cast<const ChildArgs*>(arg);
  const uint64_t no_signals = 0;
  // The terminal's signals are the command's (egress_process.h): ignored from here, through the
  // exec, so a Ctrl-C right after the launch cannot end the proxy before its main() does this.
  struct {
    long handler;
    unsigned long flags;
    long restorer;
    uint64_t mask;
  } ignore{reinterpret_cast<long>(SIG_IGN), 0, 0, 0};
  for (int sig : {SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGHUP, SIGTERM, SIGPIPE})
    rawSyscall(SYS_rt_sigaction, sig, reinterpret_cast<long>(&ignore), 0, sizeof ignore.mask);
  if (a.restore_policy) {
    const sched_param none{};
    rawSyscall(SYS_sched_setscheduler, 0, SCHED_OTHER, reinterpret_cast<long>(&none));
  }
  long rc = 0;
  if ((rc = rawSyscall(SYS_dup3, a.exec_status, kExecStatusFd, O_CLOEXEC)) < 0) rawSyscall(SYS_exit, 127);
  if ((rc = rawSyscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL)) != 0 || (rc = rawSyscall(SYS_dup3, a.devnull, 0, 0)) < 0 ||
      (rc = rawSyscall(SYS_dup3, a.devnull, 1, 0)) < 0 || (rc = rawSyscall(SYS_dup3, a.ctl, kControlFd, 0)) < 0 ||
      (rc = rawSyscall(SYS_dup3, a.chan, kChannelFd, 0)) < 0 || (rc = rawSyscall(SYS_dup3, a.events, kEventsFd, 0)) < 0 ||
      (a.agent >= 0 && (rc = rawSyscall(SYS_dup3, a.agent, kEgressAgentFd, 0)) < 0) ||
      (rc = rawSyscall(SYS_close_range, a.agent >= 0 ? kEgressAgentFd + 1 : kExecStatusFd + 1, ~0u, 0)) != 0 ||
      (rc = rawSyscall(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&no_signals), 0, sizeof no_signals)) != 0 ||
      (rc = rawSyscall(SYS_execve, reinterpret_cast<long>(a.path), reinterpret_cast<long>(a.argv),
                       reinterpret_cast<long>(a.envp))) != 0) {
    const int err = static_cast<int>(-rc);
    rawSyscall(SYS_write, kExecStatusFd, reinterpret_cast<long>(&err), sizeof err);
  }
  rawSyscall(SYS_exit, 127);
  return 127;
}

std::string describeStatus(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

class EgressProcess final : public ExecEgress {
 public:
  // wait_ready: the proxy may refuse what the launcher cannot check (a lease's secret, the
  // parent proxy's credential variable or name), so the command waits for its "ready".
  EgressProcess(bool with_leases, bool wait_ready) : with_leases_(with_leases), wait_ready_(wait_ready) {}
  ~EgressProcess() override {
    // Only on a path that never stopped it (stop() reaps it): it must not outlive the run.
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    // Reaped, so it has exec'd or died: nothing runs on its stack.
    if (stack_) ::munmap(stack_, kChildStackBytes);
  }
  EgressProcess(const EgressProcess&) = delete;
  EgressProcess& operator=(const EgressProcess&) = delete;

  Result<void> start(ExecInvocation& inv, const std::vector<std::string>& exec_args) {
    ASSIGN_OR_RETURN(std::string core, coreBinaryPath());
    int ctl[2], chan[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) != 0) return sysError("egress control socketpair");
    UniqueFd ctl_mine(ctl[0]), ctl_theirs(ctl[1]);
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, chan) != 0) return sysError("egress channel socketpair");
    UniqueFd chan_sandbox(chan[0]), chan_proxy(chan[1]);
    // Shared with the proxy, read once it has ended (egress_process.h): its events outlive it.
    events_ = UniqueFd(::memfd_create("corral-egress-events", MFD_CLOEXEC));
    if (!events_.valid()) return sysError("egress events file (memfd_create)");

    // The placeholders, fixed here because the sandbox's environment is fixed at the clone;
    // the proxy derives the same ones from the same bytes.
    std::string random(inv.credentials.size() * net::kPlaceholderRandomBytes, '\0');
    for (size_t got = 0; got < random.size();) {
      const ssize_t n = ::getrandom(random.data() + got, random.size() - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return sysError("getrandom");
      got += static_cast<size_t>(n);
    }
    // The proxy reads them first; a stream socket's buffer holds far more than any lease list.
    if (!random.empty() && ::send(ctl_mine.get(), random.data(), random.size(), MSG_NOSIGNAL) !=
                               static_cast<ssize_t>(random.size()))
      return sysError("egress control: send");

    words_ = {core, kEgressServeCommand, std::to_string(::getpid())};
    words_.insert(words_.end(), exec_args.begin(), exec_args.end());
    for (std::string& w : words_) argv_.push_back(w.data());
    argv_.push_back(nullptr);
    // The common failures, named here; any other exec failure comes back through the child's
    // exec status before the command may start (ready()).
    struct stat st{};
    if (::stat(core.c_str(), &st) != 0 || ::access(core.c_str(), X_OK) != 0) return sysError("cannot start " + core);
    if (!S_ISREG(st.st_mode)) return Error(Errc::kUnsupported, "cannot start " + core + ": not a regular file");

    // Everything the child reads stays put (members) until it has exec'd or died. Its fds are
    // moved above the numbers it places them on, so one dup cannot overwrite another.
    UniqueFd devnull(::open("/dev/null", O_RDWR | O_CLOEXEC));
    if (!devnull.valid()) return sysError("open /dev/null");
    UniqueFd ctl_high(::fcntl(ctl_theirs.get(), F_DUPFD_CLOEXEC, 10));
    UniqueFd chan_high(::fcntl(chan_proxy.get(), F_DUPFD_CLOEXEC, 10));
    UniqueFd null_high(::fcntl(devnull.get(), F_DUPFD_CLOEXEC, 10));
    UniqueFd events_high(::fcntl(events_.get(), F_DUPFD_CLOEXEC, 10));
    int status_pipe[2];
    if (::pipe2(status_pipe, O_CLOEXEC) != 0) return sysError("egress exec status pipe");
    UniqueFd status_read(status_pipe[0]), status_write(status_pipe[1]);
    UniqueFd status_high(::fcntl(status_write.get(), F_DUPFD_CLOEXEC, 10));
    if (!ctl_high.valid() || !chan_high.valid() || !null_high.valid() || !events_high.valid() || !status_high.valid())
      return sysError("egress fds");
    UniqueFd agent_high;
    if (inv.ssh_key) {
      auto sock = net::AgentSocket::create();
      if (!sock) return sock.error();
      agent_socket_.emplace(std::move(*sock));
      UniqueFd listener = agent_socket_->takeListener();
      agent_high = UniqueFd(::fcntl(listener.get(), F_DUPFD_CLOEXEC, 10));
      if (!agent_high.valid()) return sysError("egress fds");
    }
    child_ = {argv_[0],        argv_.data(),     environ,       null_high.get(), ctl_high.get(), chan_high.get(),
              events_high.get(), status_high.get(), agent_high.get(), false};
    stack_ = ::mmap(nullptr, kChildStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack_ == MAP_FAILED) {
      stack_ = nullptr;
      return sysError("mmap");
    }
    cpu_set_t cpus;
    const bool cpus_known = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 1;
    std::optional<sandbox::placement::QuietBirth> quiet;
    if (cpus_known) quiet.emplace();
    child_.restore_policy = quiet && quiet->active();
    const int pid = ::clone(childEntry, static_cast<char*>(stack_) + kChildStackBytes, CLONE_VM | SIGCHLD, &child_);
    if (pid < 0) return sysError("cannot start " + core);
    if (cpus_known) sandbox::placement::nudgeOffMyCpu(pid, cpus);
    quiet.reset();
    pid_ = pid;
    exec_status_ = std::move(status_read);  // our write ends close as start() returns
    ctl_ = std::move(ctl_mine);
    channel_ = std::move(chan_sandbox);

    inv.spec.proxy.channel = channel_.get();
    for (std::string& kv : policy::egress::proxyEnvironment(inv.spec.proxy.port)) inv.spec.env.push_back(std::move(kv));
    for (size_t i = 0; i < inv.credentials.size(); ++i) {
      const auto* bytes = reinterpret_cast<const uint8_t*>(random.data()) + i * net::kPlaceholderRandomBytes;
      inv.spec.env.push_back(inv.credentials[i].env + "=" +
                             net::leasePlaceholder(inv.credentials[i].name,
                                                   std::span<const uint8_t, net::kPlaceholderRandomBytes>(
                                                       bytes, net::kPlaceholderRandomBytes)));
    }
    explicit_bzero(random.data(), random.size());
    if (agent_socket_) exposeAgentSocket(inv, agent_socket_->hostPath());
    return {};
  }

  Result<void> ready(int signals) override {
    // Whatever else, the proxy must have started: an exec that failed (a corral-core that is
    // not a program for this machine) refuses the run here, named, with nothing run. Its exec
    // is long done by the time the sandbox is built, so this read does not wait in practice.
    if (auto exec = execResult(); !exec) return fail(exec.error());
    if (wait_ready_) {
      // A lease's variable, its value or the CA bundle may be refused: the command waits for
      // the proxy's answer (the proxy reads its secrets before it answers).
      if (auto line = readReadyLine(signals, kProxyWaitMs); !line) return fail(line.error());
      return {};
    }
    // Without leases nothing the caller gave can make the proxy refuse (the launcher parsed the
    // same arguments), so the command does not wait for it: a connection it makes first waits
    // in the channel until the proxy serves. An answer already there is taken, so a proxy that
    // has refused or died by now still stops the launch. One that fails later ends the run as
    // corral's failure (stop()), with nothing let out meanwhile.
    if (auto line = readReadyLine(-1, 0); !line && !timedOut(line.error())) return fail(line.error());
    return {};
  }

  // The proxy's first line: "ready", or "error MESSAGE". Waits up to timeout_ms (0: only what
  // is there); a terminating signal on `signals` (-1: none) ends the wait with an error.
  Result<void> readReadyLine(int signals, int timeout_ms) {
    while (pending_.find('\n') == std::string::npos) {
      char buf[512];
      auto n = readSome(buf, sizeof buf, timeout_ms, signals);
      if (!n) return n.error();
      if (*n == 0) return ended("ended before it served");
      pending_.append(buf, *n);
    }
    const size_t eol = pending_.find('\n');
    const std::string line = pending_.substr(0, eol);
    pending_.erase(0, eol + 1);
    ready_read_ = true;
    if (line == "ready") return {};
    if (line.rfind("error ", 0) == 0) return Error(Errc::kRefused, line.substr(6));
    return Error(Errc::kIo, "the egress proxy said something unexpected");
  }

  Result<void> stop() override {
    if (pid_ <= 0) return {};  // never started, or ready() failed and reaped it (already said)
    ::shutdown(ctl_.get(), SHUT_WR);
    std::string text = std::move(pending_);
    Result<void> failed{};
    for (;;) {
      char buf[16384];
      auto n = readSome(buf, sizeof buf, kProxyWaitMs, -1);
      if (!n) {
        failed = n.error();
        ::kill(pid_, SIGKILL);
        break;
      }
      if (*n == 0) break;
      text.append(buf, *n);
    }
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    // What it recorded is in the report however it ended; a failure below fails the run.
    const size_t unreadable = collectEvents();
    if (!failed) return failed;
    // The answer to the start is still first when nobody waited for it.
    if (!ready_read_) {
      const size_t eol = text.find('\n');
      const std::string line = text.substr(0, eol);
      if (line.rfind("error ", 0) == 0) return Error(Errc::kRefused, line.substr(6));
      text.erase(0, eol == std::string::npos ? text.size() : eol + 1);
      if (line != "ready" && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return Error(Errc::kIo, "the egress proxy said something unexpected");
    }
    // After the stop: nothing, or why an event could not be recorded.
    if (text.rfind("error ", 0) == 0) return Error(Errc::kIo, text.substr(6, text.find('\n') - 6));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      return Error(Errc::kIo, "the egress proxy (corral-core) ended with " + describeStatus(status));
    if (!text.empty()) return Error(Errc::kIo, "the egress proxy said something unexpected");
    if (unreadable > 0) return Error(Errc::kIo, std::to_string(unreadable) + " of the egress proxy's events are unreadable");
    return {};
  }

  void addToReport(nlohmann::ordered_json& extra) override {
    extra["egress"] = std::move(egress_events_);
    if (with_leases_) extra["leases"] = std::move(lease_events_);
    if (!overflow_.empty()) extra["egress_overflow"] = std::move(overflow_);
  }

 private:
  // One read from the control socket, waiting at most timeout_ms. 0: end of file (a reset
  // too: the proxy ended with our placeholder bytes unread). A terminating signal on
  // `signals` (-1: none) is an error; others are dropped, as no command runs yet to get them.
  Result<size_t> readSome(char* buf, size_t size, int timeout_ms, int signals) {
    for (;;) {
      pollfd p[2] = {{ctl_.get(), POLLIN, 0}, {signals, POLLIN, 0}};
      const int r = ::poll(p, signals >= 0 ? 2 : 1, timeout_ms);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return sysError("egress control: poll");
      if (r == 0)
        return Error(ETIMEDOUT, "the egress proxy did not answer in " + std::to_string(timeout_ms / 1000) + " s");
      if (signals >= 0 && (p[1].revents & POLLIN)) {
        signalfd_siginfo si{};
        if (::read(signals, &si, sizeof si) == static_cast<ssize_t>(sizeof si) &&
            sandbox::endsTheWait(static_cast<int>(si.ssi_signo)))
          return Error(Errc::kRefused, std::string("interrupted by SIG") + sigabbrev_np(static_cast<int>(si.ssi_signo)) +
                                           " before the command started");
        continue;
      }
      const ssize_t n = ::read(ctl_.get(), buf, size);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == ECONNRESET) return size_t{0};
      if (n < 0) return sysError("egress control: read");
      return static_cast<size_t>(n);
    }
  }

  static bool timedOut(const Error& e) { return e.code() == ETIMEDOUT; }

  // Reads the events file of an ended proxy into the report's lists; returns how many lines
  // did not read as an event. A last line without its newline is a write cut short by the
  // proxy's death, not counted: the run fails for that death already.
  size_t collectEvents() {
    struct stat st{};
    if (!events_.valid() || ::fstat(events_.get(), &st) != 0) return 0;
    std::string text(static_cast<size_t>(st.st_size), '\0');
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::pread(events_.get(), text.data() + got, text.size() - got, static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
    events_.reset();
    size_t unreadable = 0;
    for (size_t pos = 0, eol; (eol = text.find('\n', pos)) != std::string::npos; pos = eol + 1) {
      const std::string_view line(text.data() + pos, eol - pos);
      const size_t space = line.find(' ');
      const std::string_view kind = line.substr(0, space);
      auto event = space == std::string_view::npos
                       ? nlohmann::ordered_json()
                       : nlohmann::ordered_json::parse(line.substr(space + 1), nullptr, /*allow_exceptions=*/false);
      const bool object = event.is_object();
      if (object && kind == "egress") egress_events_.push_back(std::move(event));
      else if (object && kind == "lease") lease_events_.push_back(std::move(event));
      else if (object && kind == "overflow") overflow_ = std::move(event);
      else ++unreadable;
    }
    return unreadable;
  }

  // The child's exec: ok, or why it failed.
  Result<void> execResult() {
    if (!exec_status_.valid()) return {};
    int err = 0;
    ssize_t n;
    while ((n = ::read(exec_status_.get(), &err, sizeof err)) < 0 && errno == EINTR) {
    }
    exec_status_.reset();
    if (n == static_cast<ssize_t>(sizeof err)) return Error(err, "cannot start " + words_.front());
    return {};
  }

  // ready() failed: the proxy will not serve this run. It is ended and reaped here, so that
  // stop() has nothing more to say (one line per refusal).
  Error fail(Error e) {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
      pid_ = -1;
    }
    return e;
  }

  Error ended(const std::string& what) {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return Error(Errc::kIo, "the egress proxy (corral-core) " + what + " (" + describeStatus(status) + ")");
  }

  const bool with_leases_;
  const bool wait_ready_;
  std::vector<std::string> words_;  // the child's argv, kept until it has exec'd
  std::vector<char*> argv_;
  ChildArgs child_{};
  void* stack_ = nullptr;
  pid_t pid_ = -1;
  UniqueFd ctl_;
  UniqueFd channel_;  // the sandbox's end
  std::string pending_;  // read past the ready line
  bool ready_read_ = false;
  UniqueFd exec_status_;  // the child's exec status pipe (ready() reads it)
  UniqueFd events_;       // the events file, read by stop()
  std::optional<net::AgentSocket> agent_socket_;  // --ssh-key: its file, removed after the run
  nlohmann::ordered_json egress_events_ = nlohmann::ordered_json::array();
  nlohmann::ordered_json lease_events_ = nlohmann::ordered_json::array();
  nlohmann::ordered_json overflow_ = nlohmann::ordered_json::object();  // past the events recorded one by one
};

}  // namespace

Result<std::unique_ptr<ExecEgress>> startEgressProcess(ExecInvocation& inv, const std::vector<std::string>& exec_args) {
  auto egress = std::make_unique<EgressProcess>(!inv.credentials.empty(),
                                                !inv.credentials.empty() || inv.upstream_proxy || inv.ssh_key);
  RETURN_IF_ERROR(egress->start(inv, exec_args));
  return std::unique_ptr<ExecEgress>(std::move(egress));
}

}  // namespace corral::cli
