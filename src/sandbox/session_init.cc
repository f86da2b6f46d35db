// SPDX-License-Identifier: Apache-2.0
// A session's init loop: spawn requests in, pids and wait statuses out (session_protocol.h).
#include "sandbox/session_init.h"

#include <errno.h>
#include <linux/capability.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "base/fd_passing.h"
#include "sandbox/netns.h"
#include "sandbox/session_protocol.h"

namespace corral::sandbox::session {
namespace {

constexpr int kSock = 3;          // as in child.cc
constexpr int kProxyChannel = 4;  // as in child.cc
constexpr int kSpawnFds = 4;      // memfd, stdin, stdout, stderr

struct Running {
  pid_t pid = 0;
  uint32_t cmd = 0;
};
// Static, not on the heap: init is a clone of a process that may hold malloc's locks.
Running g_running[kMaxCommands];
char* g_argv[kMaxStrings + 1];
char* g_envp[kMaxStrings + 1];
const char* g_paths[kMaxStrings];

// fd >= 0 (kSpawned of a tty command: the terminal's master) goes along as SCM_RIGHTS.
void reply(Op op, uint32_t cmd, int32_t pid, int32_t value, int fd = -1) {
  Packet p{};
  p.op = op;
  p.cmd = cmd;
  p.pid = pid;
  p.value = value;
  (void)sendWithFd(kSock, &p, sizeof p, fd);
}

// A new terminal of the sandbox's own devpts instance (never the host's: /dev/pts here is the
// instance mounted for this sandbox), its size set; the slave opened through the master
// (TIOCGPTPEER), so no path is looked up for it. 0 or -errno.
// Both land above stdio: init keeps no 0..2, so they would otherwise be 0..2 themselves, and
// the command's dup2(slave, 2) onto the same number would leave it close-on-exec.
int aboveStdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
  ::close(fd);
  return moved;
}

int openTerminal(uint32_t size, int* master, int* slave) {
  *master = aboveStdio(::open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (*master < 0) return -errno;
  int unlock = 0;
  const winsize ws{static_cast<unsigned short>(size >> 16), static_cast<unsigned short>(size & 0xffff), 0, 0};
  if (::ioctl(*master, TIOCSPTLCK, &unlock) != 0 || ::ioctl(*master, TIOCSWINSZ, &ws) != 0 ||
      (*slave = aboveStdio(::ioctl(*master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC))) < 0) {
    const int e = errno;
    ::close(*master);
    return -e;
  }
  return 0;
}

void closeAll(const int* fds, int n) {
  for (int i = 0; i < n; ++i) ::close(fds[i]);
}

// Keeps CAP_SETPCAP alone: each command's caps::dropAll needs it to empty its bounding set
// and lock the securebits; nothing else init could do with a capability is left to it.
int keepOnlySetpcap() {
  for (int cap = 0; cap <= 63; ++cap) {
    if (cap == CAP_SETPCAP) continue;
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return errno;
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) return errno;
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  data[0].effective = data[0].permitted = 1u << CAP_SETPCAP;
  if (::syscall(SYS_capset, &hdr, data) != 0) return errno;
  return 0;
}

// One packet and up to kSpawnFds fds. Returns the packet size, 0 on EOF, -errno.
ssize_t receive(Packet* p, int* fds, int* nfds) {
  iovec iov{p, sizeof *p};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(kSpawnFds * sizeof(int))];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = ::recvmsg(kSock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n < 0) return -errno;
  *nfds = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const int count = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < count; ++i) {
      int fd;
      ::memcpy(&fd, CMSG_DATA(c) + static_cast<size_t>(i) * sizeof(int), sizeof fd);
      if (*nfds < kSpawnFds) fds[(*nfds)++] = fd;
      else ::close(fd);
    }
  }
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) return -EMSGSIZE;
  return n;
}

// The next NUL-ended string in [*cur, end), or nullptr.
char* nextString(char** cur, const char* end) {
  if (*cur >= end) return nullptr;
  char* nul = static_cast<char*>(::memchr(*cur, 0, static_cast<size_t>(end - *cur)));
  if (nul == nullptr) return nullptr;
  char* s = *cur;
  *cur = nul + 1;
  return s;
}

// fds: [memfd, stdin, stdout, stderr], or [memfd] with p.tty (then *master gets the terminal).
int32_t spawn(const child::Context& base, const Packet& p, const int* fds, int* master) {
  if (p.bytes == 0 || p.bytes > kMaxSpawnBytes || p.argc == 0 || p.argc > kMaxStrings || p.envc > kMaxStrings ||
      p.pathc == 0 || p.pathc > kMaxStrings)
    return -EINVAL;
  struct stat st;
  if (::fstat(fds[0], &st) != 0 || st.st_size < static_cast<off_t>(p.bytes)) return -EINVAL;
  Running* slot = nullptr;
  for (Running& r : g_running)
    if (r.pid == 0) {
      slot = &r;
      break;
    }
  if (slot == nullptr) return -EAGAIN;
  int slave = -1;
  if (p.tty != 0)
    if (const int e = openTerminal(p.tty, master, &slave)) return e;
  void* map = ::mmap(nullptr, p.bytes, PROT_READ, MAP_PRIVATE, fds[0], 0);
  if (map == MAP_FAILED) {
    const int e = errno;
    if (slave >= 0) ::close(slave);
    if (*master >= 0) ::close(*master);
    *master = -1;
    return -e;
  }
  char* cur = static_cast<char*>(map);
  char* end = cur + p.bytes;
  bool ok = true;
  for (uint32_t i = 0; ok && i < p.argc; ++i) ok = (g_argv[i] = nextString(&cur, end)) != nullptr;
  g_argv[p.argc] = nullptr;
  for (uint32_t i = 0; ok && i < p.envc; ++i) ok = (g_envp[i] = nextString(&cur, end)) != nullptr;
  g_envp[p.envc] = nullptr;
  char* cwd = ok ? nextString(&cur, end) : nullptr;
  ok = ok && cwd != nullptr && cwd[0] == '/';
  for (uint32_t i = 0; ok && i < p.pathc; ++i) ok = (g_paths[i] = nextString(&cur, end)) != nullptr;
  long pid = -EINVAL;
  if (ok) {
    child::Context c = base;
    c.argv = g_argv;
    c.envp = g_envp;
    c.exec_paths = g_paths;
    c.exec_path_count = p.pathc;
    c.cwd = cwd;
    for (int i = 0; i < 3; ++i) c.cmd_stdio[i] = p.tty ? slave : fds[1 + i];
    c.cmd_tty = p.tty != 0;
    c.stamps = nullptr;
    // Invariant: the command has exec'd or exited when this returns (CLONE_VFORK), so the
    // mapping its argv points into may go.
    pid = child::spawnSessionCommand(c);
  }
  ::munmap(map, p.bytes);
  if (slave >= 0) ::close(slave);  // the command has its own copy (or failed)
  if (pid <= 0 && *master >= 0) {
    ::close(*master);
    *master = -1;
  }
  if (pid > 0) {
    slot->pid = static_cast<pid_t>(pid);
    slot->cmd = p.cmd;
  }
  return static_cast<int32_t>(pid);
}

void reapAll() {
  int status;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    for (Running& r : g_running)
      if (r.pid == pid) {
        reply(Op::kExited, r.cmd, pid, status);
        r.pid = 0;
      }
  }
}

void signalCommand(const Packet& p) {
  for (const Running& r : g_running)
    if (r.pid != 0 && r.pid == p.pid) {
      // Each command leads its own process group (setsid); fall back to the pid alone.
      if (::kill(-r.pid, p.value) != 0) ::kill(r.pid, p.value);
    }
}

}  // namespace

void serve(const child::Context& ctx, const sigset_t& waited, int proxy_listen) {
  if (keepOnlySetpcap() != 0) ::_exit(125);
  ::syscall(SYS_close_range, 0u, 2u, 0);  // init keeps no stdio
  const int sigfd = ::signalfd(-1, &waited, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) ::_exit(125);
  for (;;) {
    pollfd fds[3] = {{sigfd, POLLIN, 0}, {kSock, POLLIN, 0}, {proxy_listen, POLLIN, 0}};
    if (::poll(fds, proxy_listen >= 0 ? 3 : 2, -1) < 0) continue;
    if (proxy_listen >= 0 && (fds[2].revents & POLLIN)) netns::relayPending(proxy_listen, kProxyChannel);
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo si;
      // Only SIGCHLD means anything here; the rest (forwarded by nobody) are dropped.
      while (::read(sigfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      }
      reapAll();
    }
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      Packet p{};
      int passed[kSpawnFds];
      int n = 0;
      const ssize_t got = receive(&p, passed, &n);
      if (got == 0 || (got < 0 && got != -EMSGSIZE)) ::_exit(0);  // the shim is gone: so is the session
      if (got != static_cast<ssize_t>(sizeof p) || p.magic != kMagic) {
        closeAll(passed, n);
        continue;
      }
      if (p.op == Op::kSpawn) {
        int master = -1;
        const int32_t pid = n == (p.tty ? 1 : kSpawnFds) ? spawn(ctx, p, passed, &master) : -EINVAL;
        closeAll(passed, n);
        reply(Op::kSpawned, p.cmd, pid, 0, master);
        if (master >= 0) ::close(master);  // the shim has it now
      } else {
        closeAll(passed, n);
        if (p.op == Op::kSignal) signalCommand(p);
      }
    }
  }
}

}  // namespace corral::sandbox::session
