// SPDX-License-Identifier: Apache-2.0
// corral-core's side of a proxy process (cli/egress_process.h): serve the sandbox's channel,
// recording each event in the events file, until the launcher says stop.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli/egress_process.h"
#include "cli/exec_options.h"
#include "cli/option_echo.h"
#include "net/lease_spec.h"

namespace corral::cli {
namespace {

constexpr int kControlFd = kEgressControlFd;
constexpr int kChannelFd = kEgressChannelFd;
constexpr int kEventsFd = kEgressEventsFd;
constexpr int kExitCorral = 125;

bool isUnixSocket(int fd, int type) {
  int got = 0;
  socklen_t len = sizeof got;
  sockaddr_storage addr{};
  socklen_t alen = sizeof addr;
  return ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &got, &len) == 0 && got == type &&
         ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) == 0 && addr.ss_family == AF_UNIX;
}

bool isWritableFile(int fd) {
  struct stat st{};
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && (flags & O_ACCMODE) != O_RDONLY && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

bool writeAll(const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::send(kControlFd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool readExact(std::string* out, size_t size) {
  out->assign(size, '\0');
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::read(kControlFd, out->data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

int refuse(const std::string& message) {
  writeAll("error " + oneLine(message) + "\n");
  return kExitCorral;
}

}  // namespace

int egressServeMain(const std::vector<std::string>& args) {
  // Dies with the launcher; PARENT_PID closes the race with a launcher that died first.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  char* end = nullptr;
  const long parent = args.empty() ? 0 : std::strtol(args[0].c_str(), &end, 10);
  if (args.empty() || *end != '\0' || parent <= 0 || !isUnixSocket(kControlFd, SOCK_STREAM) ||
      !isUnixSocket(kChannelFd, SOCK_SEQPACKET) || !isWritableFile(kEventsFd)) {
    std::fprintf(stderr, "corral: %s is started by corral exec --net proxy, not by hand\n", kEgressServeCommand);
    return kExitCorral;
  }
  if (::getppid() != static_cast<pid_t>(parent)) ::_exit(kExitCorral);  // its corral is gone: nobody to tell
  // The terminal's signals are for the command (the launcher forwards them), and a closed
  // control socket is an error here, not a death: this process ends when the launcher says.
  // A caller's small RLIMIT_FSIZE makes an events write fail (EFBIG), which fails the run,
  // instead of killing the proxy.
  for (int sig : {SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGHUP, SIGTERM, SIGPIPE, SIGXFSZ}) ::signal(sig, SIG_IGN);

  auto parsed = parseExecArgs(std::vector<std::string>(args.begin() + 1, args.end()));
  if (!parsed) return refuse(parsed.error().message());
  ExecInvocation& inv = *parsed;
  std::string random;
  if (!readExact(&random, inv.credentials.size() * net::kPlaceholderRandomBytes))
    return refuse("egress control: the placeholders did not arrive");
  size_t next = 0;
  EgressWiring wiring;
  wiring.proxy_end = UniqueFd(kChannelFd);
  wiring.events_file = UniqueFd(kEventsFd);
  if (inv.ssh_key) {
    if (!isUnixSocket(kEgressAgentFd, SOCK_STREAM)) return refuse("--ssh-key: the agent socket did not arrive");
    wiring.ssh_agent_listener = UniqueFd(kEgressAgentFd);
  }
  wiring.placeholder_random = [&random, &next](std::span<uint8_t> out) -> Result<void> {
    if (random.size() - next < out.size()) return Error(Errc::kIo, "egress control: too few placeholder bytes");
    std::memcpy(out.data(), random.data() + next, out.size());
    next += out.size();
    return {};
  };
  auto started = startExecEgress(inv, std::move(wiring));
  explicit_bzero(random.data(), random.size());
  if (!started) return refuse(started.error().message());
  std::unique_ptr<ExecEgress> egress = std::move(*started);
  if (!writeAll("ready\n")) return kExitCorral;  // the launcher is gone

  // Serve until the launcher shuts its side (or dies: the same end of file).
  for (;;) {
    char buf[64];
    const ssize_t n = ::read(kControlFd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
  }
  // Every event is in the events file by now (the stop joined the proxy thread).
  // _exit, not a return: exit() would wait for a trust store still loading for leases nobody
  // used (net/tls_upstream.cc), and nothing of this process needs tearing down. Everything
  // was written with write(2) and send(2).
  if (auto stopped = egress->stop(); !stopped) ::_exit(refuse(stopped.error().message()));
  ::_exit(0);
}

}  // namespace corral::cli
