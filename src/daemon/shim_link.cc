// SPDX-License-Identifier: Apache-2.0
// Starting shims and speaking to them over their control sockets.
#include "daemon/shim_link.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "daemon/fd_receive.h"
#include "daemon/shim.h"
#include "daemon/unix_address.h"

namespace corral::daemon {
namespace {

constexpr int kReadyTimeoutMs = 120'000;  // a loaded machine may take seconds to build a sandbox
constexpr int kCallTimeoutMs = 60'000;

Result<std::string> readLine(int fd, int timeout_ms) {
  std::string out;
  char buf[4096];
  while (out.find('\n') == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, timeout_ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return Error(Errc::kIo, "session shim: no answer in time");
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error(Errc::kIo, "session shim: exited before the sandbox was up");
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxControlBytes) return Error(Errc::kIo, "session shim: answer too long");
  }
  return out.substr(0, out.find('\n'));
}

Result<ShimProcesses> processesOf(const Json& j) {
  ShimProcesses p;
  for (auto [key, field] : {std::pair{"shim_pid", &p.shim_pid}, {"shim_start", &p.shim_start}, {"init_pid", &p.init_pid},
                            {"init_start", &p.init_start}}) {
    if (!j.contains(key) || !j[key].is_number_integer()) continue;
    *field = j[key].get<int64_t>();
  }
  if (p.shim_pid <= 0) return Error(Errc::kIo, "session shim: no pid in its answer");
  return p;
}

}  // namespace

char* controlBuffer() {
  thread_local const std::unique_ptr<char[]> buf = std::make_unique_for_overwrite<char[]>(kMaxControlBytes);
  return buf.get();
}

Result<ShimProcesses> startShim(const std::string& core, const std::string& dir, const Json& config, const std::string& leases) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return sysError("pipe");
  UniqueFd in_r(in[0]), in_w(in[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) return sysError("pipe");
  UniqueFd out_r(out[0]), out_w(out[1]);
  std::vector<std::string> args = {core, kShimCommand, dir};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // posix_spawn, not fork: glibc's spawn shares the daemon's memory until the exec (vfork's
  // CLONE_VM), so the daemon's pages are not made copy-on-write. After a fork, the next
  // request paid about 55 page faults (copies of pages the fork had shared), 0.1 ms of a warm
  // create. The child is a session leader with stdin and stdout on the pipes; the shim then
  // forks once itself and its first process exits (shimMain), so the shim is nobody's child
  // here and no terminal's, as with a double fork.
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  if (::posix_spawn_file_actions_init(&fa) != 0) return Error(Errc::kIo, "posix_spawn_file_actions_init");
  struct FreeActions {
    posix_spawn_file_actions_t* fa;
    ~FreeActions() { ::posix_spawn_file_actions_destroy(fa); }
  } free_fa{&fa};
  if (::posix_spawnattr_init(&attr) != 0) return Error(Errc::kIo, "posix_spawnattr_init");
  struct FreeAttr {
    posix_spawnattr_t* attr;
    ~FreeAttr() { ::posix_spawnattr_destroy(attr); }
  } free_attr{&attr};
  sigset_t none, defaults;
  sigemptyset(&none);
  sigfillset(&defaults);
  sigdelset(&defaults, SIGPIPE);  // left ignored (the daemon ignores it): a daemon that died mid-create must not kill the shim
  if (::posix_spawn_file_actions_adddup2(&fa, in_r.get(), 0) != 0 || ::posix_spawn_file_actions_adddup2(&fa, out_w.get(), 1) != 0 ||
      ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF) != 0 ||
      ::posix_spawnattr_setsigmask(&attr, &none) != 0 || ::posix_spawnattr_setsigdefault(&attr, &defaults) != 0)
    return Error(Errc::kIo, "posix_spawn: attributes");
  char* envp[] = {nullptr};  // nothing of the daemon's environment
  pid_t mid = -1;
  if (const int rc = ::posix_spawn(&mid, argv[0], &fa, &attr, argv.data(), envp); rc != 0) {
    errno = rc;
    return sysError("posix_spawn " + core);
  }
  while (::waitpid(mid, nullptr, 0) < 0 && errno == EINTR) {
  }
  in_r.reset();
  out_w.reset();
  const std::string text = dumpJson(config);
  const std::string head = std::to_string(text.size()) + "\n";
  for (const std::string* part : {&head, &text, &leases})
    for (size_t done = 0; done < part->size();) {
      const ssize_t n = ::write(in_w.get(), part->data() + done, part->size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return sysError("session shim: config");
      done += static_cast<size_t>(n);
    }
  in_w.reset();
  ASSIGN_OR_RETURN(std::string line, readLine(out_r.get(), kReadyTimeoutMs));
  ASSIGN_OR_RETURN(Json ready, parseJson(line));
  if (ready.contains("error") && ready["error"].is_string())
    return Error(Errc::kRefused, ready["error"].get<std::string>());
  return processesOf(ready);
}

Result<ShimLink> ShimLink::connect(const std::string& dir, const std::string& secret, const ShimProcesses& expect) {
  const std::string path = dir + "/control.sock";
  ASSIGN_OR_RETURN(sockaddr_un addr, unixAddress(path));
  UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sysError("socket");
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return sysError("connect " + path);
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) return sysError("SO_PEERCRED");
  if (peer.uid != ::getuid()) return Error(Errc::kRefused, "control socket served by another uid");
  // The pidfd first, then the start time: a pid reused in between cannot pass for the shim.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, peer.pid, 0)));
  if (!pidfd.valid()) return sysError("pidfd_open shim");
  if (expect.shim_pid != 0 &&
      (peer.pid != expect.shim_pid || static_cast<int64_t>(processStartTime(peer.pid)) != expect.shim_start))
    return Error(Errc::kRefused, "control socket served by a process that is not the recorded shim");
  ShimLink link(std::move(fd), std::move(pidfd));
  ASSIGN_OR_RETURN(Json hello, link.call({{"op", "hello"}, {"secret", secret}}));
  ASSIGN_OR_RETURN(link.procs_, processesOf(hello));
  if (link.procs_.shim_pid != peer.pid) return Error(Errc::kRefused, "control socket: shim pid mismatch");
  // Its init must be the recorded one too (a shim whose sandbox was replaced is not adopted).
  if (expect.init_pid != 0 && (link.procs_.init_pid != expect.init_pid || link.procs_.init_start != expect.init_start))
    return Error(Errc::kRefused, "control socket: the shim's init is not the recorded one");
  // init's pidfd, then its start time again (a pid reused in between fails): alive() needs it.
  link.init_pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(link.procs_.init_pid), 0)));
  if (link.init_pidfd_.valid() && static_cast<int64_t>(processStartTime(static_cast<int>(link.procs_.init_pid))) != link.procs_.init_start)
    link.init_pidfd_.reset();
  return link;
}

std::optional<bool> ShimLink::alive() const {
  if (!init_pidfd_.valid()) return std::nullopt;
  // A pidfd polls readable once its process has exited.
  pollfd p[2] = {{pidfd_.get(), POLLIN, 0}, {init_pidfd_.get(), POLLIN, 0}};
  const int rc = ::poll(p, 2, 0);
  if (rc < 0) return std::nullopt;
  return rc == 0;
}

Result<Json> ShimLink::call(const Json& req, UniqueFd* fd) {
  std::string text = dumpJson(req);
  const ssize_t sent = ::send(fd_.get(), text.data(), text.size(), MSG_NOSIGNAL);
  const int send_errno = errno;
  std::fill(text.begin(), text.end(), '\0');  // a rotate_lease carries a credential value
  if (sent != static_cast<ssize_t>(text.size())) {
    errno = send_errno;
    return sysError("session shim: send");
  }
  pollfd p{fd_.get(), POLLIN, 0};
  int rc;
  while ((rc = ::poll(&p, 1, kCallTimeoutMs)) < 0 && errno == EINTR) {
  }
  if (rc <= 0) return Error(Errc::kIo, "session shim: no answer in time");
  char* buf = controlBuffer();
  const ssize_t n = recvWithFd(fd_.get(), buf, kMaxControlBytes, fd);
  if (n <= 0) return Error(Errc::kIo, "session shim: connection closed");
  auto parsed = parseJson(std::string_view(buf, static_cast<size_t>(n)));
  std::fill(buf, buf + n, '\0');
  ASSIGN_OR_RETURN(Json res, std::move(parsed));
  if (!res.is_object() || !res.contains("ok") || res["ok"] != true)
    return Error(Errc::kRefused, res.is_object() && res.contains("error") && res["error"].is_string()
                                     ? res["error"].get<std::string>()
                                     : std::string("session shim: refused"));
  return res;
}

bool ShimLink::waitGone(int timeout_ms) {
  for (;;) {
    pollfd p{pidfd_.get(), POLLIN, 0};
    const int rc = ::poll(&p, 1, timeout_ms);
    if (rc < 0 && errno == EINTR) continue;
    return rc > 0;
  }
}

}  // namespace corral::daemon
