// SPDX-License-Identifier: Apache-2.0
// Loopback bring-up with one ioctl (cheaper than a netlink round trip).
#include "sandbox/netns.h"

#include "base/fd_passing.h"
#include "base/raw_syscall.h"
#include "sandbox/cpu_placement.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace corral::sandbox::netns {

namespace {

// The helper shares init's memory (CLONE_VM) and runs beside it: raw system calls only
// (base/raw_syscall.h), on its own stack (CORRAL_ON_OWN_STACK).

// Brings "lo" up through a socket of its network namespace. Returns 0 or -errno.
CORRAL_ON_OWN_STACK long bringUpLoopback(int fd) {
  ifreq ifr{};
  ifr.ifr_name[0] = 'l';  // byte by byte: an ASan build's memcpy interceptor reads init's TLS
  ifr.ifr_name[1] = 'o';
  long rc = rawSyscall(SYS_ioctl, fd, SIOCGIFFLAGS, reinterpret_cast<long>(&ifr));
  if (rc != 0) return rc;
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
  return rawSyscall(SYS_ioctl, fd, SIOCSIFFLAGS, reinterpret_cast<long>(&ifr));
}

struct Ready {
  int err;   // 0, or making the namespaces or bringing up loopback failed with this
  int sock;  // a socket in the new network namespace, in the fd table the helper shares with init
  int ipc;   // the new IPC namespace's handle (/proc/thread-self/ns/ipc), in the same table
};

// The helper shares init's memory and fd table (CLONE_VM | CLONE_FILES) and nothing else. A
// copy-on-write fork of init cost 0.14-0.17 ms of init's critical path here (copying the page
// tables of a clone of corral), and more in faults afterwards; with CLONE_VM the clone is a few
// microseconds. It runs on its own stack (startMaker), reads nothing init may change (its
// argument is the pipe's number, in the maker), writes only that stack, and makes raw system
// calls.
// The socket it leaves in the shared table holds the network namespace after it exits, and init
// reaches it through that socket (SIOCGSKNS). The IPC namespace has no such handle, so the
// helper opens its own /proc/thread-self/ns/ipc: before init's pivot_root that is the caller's
// /proc, after it the sandbox's (pivot_root moves the helper's root too), and either way the
// helper's own namespace. Whatever else the path could be made to name fails closed: no file
// (ENOENT), or a namespace that init's setns() refuses (EPERM: init holds CAP_SYS_ADMIN only
// over namespaces the sandbox's user namespace owns).
CORRAL_ON_OWN_STACK int makerEntry(void* arg) {
  const int ready = *static_cast<const int*>(arg);  // Maker::ready_write
  Ready r{0, -1, -1};
  long rc = rawSyscall(SYS_unshare, CLONE_NEWNET | CLONE_NEWIPC);
  if (rc == 0 && (rc = rawSyscall(SYS_socket, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0) {
    r.sock = static_cast<int>(rc);
    static constexpr char kIpc[] = "/proc/thread-self/ns/ipc";
    rc = rawSyscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>(kIpc), O_RDONLY | O_CLOEXEC);
    if (rc >= 0) {
      r.ipc = static_cast<int>(rc);
      rc = bringUpLoopback(r.sock);
    }
  }
  r.err = rc < 0 ? static_cast<int>(-rc) : 0;
  rc = rawSyscall(SYS_write, ready, reinterpret_cast<long>(&r), sizeof r);
  return rc == static_cast<long>(sizeof r) ? 0 : 1;  // glibc's clone trampoline exits with it
}

// Keeps the helper off the CPU init runs on. The scheduler may start a new task on its
// parent's CPU even when another one is idle (it counts the parent's recent load there), and
// the task then waits for init to block, or for a balancing tick, before it runs: the namespace
// got built after the mounts instead of beside them, 1 ms later (seen in `perf sched` here).
// The mask comes from the caller's CPUs as corral read them before the clone, not from init's
// own: corral narrows init's mask for a moment to move it (cpu_placement.h), and a helper
// cloned in that moment would inherit the narrow mask, which names init's own CPU. Best effort:
// one allowed CPU, or a failed call, leaves the placement to the scheduler; joinMaker's rescue
// covers every case.
void keepOffInitsCpu(const Maker& maker, const cpu_set_t* caller_cpus) {
  cpu_set_t whole, others;
  if (caller_cpus != nullptr) whole = *caller_cpus;
  else if (::sched_getaffinity(0, sizeof whole, &whole) != 0) return;
  if (placement::othersThanMine(whole, &others)) (void)::sched_setaffinity(maker.pid, sizeof others, &others);
}

constexpr size_t kHelperStackBytes = size_t{64} * 1024;

// How long init lets the helper finish where it is before moving it to init's own CPU.
constexpr int kJoinPatienceMs = 2;

}  // namespace

int startMaker(Maker* maker, const cpu_set_t* caller_cpus) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) return errno;
  void* stack = ::mmap(nullptr, kHelperStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    const int e = errno;
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return e;
  }
  // Not CLONE_NEWNET | CLONE_NEWIPC: clone would build the namespaces on init's CPU; unshare()
  // in the helper builds them on the other one.
  // The helper reads the write end's number from the maker, which init leaves alone until it
  // has reaped the helper (joinMaker), so it is set before the clone.
  maker->ready_write = pipe_fds[1];
  const int pid = ::clone(makerEntry, static_cast<char*>(stack) + kHelperStackBytes, CLONE_VM | CLONE_FILES | SIGCHLD,
                          &maker->ready_write);
  if (pid < 0) {
    const int err = errno;
    ::munmap(stack, kHelperStackBytes);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    maker->ready_write = -1;
    return err;
  }
  // The helper holds its own reference to the write end (shared table): closing it here would
  // close it for both. It goes, with the stack the helper runs on, once the helper has been
  // reaped (joinMaker).
  maker->pid = pid;
  maker->ready = pipe_fds[0];
  maker->stack = stack;
  keepOffInitsCpu(*maker, caller_cpus);
  return 0;
}

int joinMaker(Maker* maker) {
  // A helper that has not reported within kJoinPatienceMs is most likely queued behind other
  // work on the CPU it was kept to (a busy or real-time task took that CPU: a SCHED_FIFO
  // spinner stalled one launch 0.57 s). Init is about to sleep, so its own CPU is the sure
  // place: move the helper there. Widening its mask would not do: a queued task stays on a CPU
  // it is still allowed. Whatever mask the helper got, pinned or inherited.
  pollfd late{maker->ready, POLLIN, 0};
  const int mine = ::sched_getcpu();
  if (::poll(&late, 1, kJoinPatienceMs) == 0 && mine >= 0 && mine < CPU_SETSIZE) {
    cpu_set_t here;
    CPU_ZERO(&here);
    CPU_SET(mine, &here);
    (void)::sched_setaffinity(maker->pid, sizeof here, &here);  // ESRCH: it has just gone
  }
  // Reap first, then read without blocking: the pipe's write end is also in init's table (it
  // is shared), so a helper killed before it wrote would leave a blocking read waiting forever.
  int status = 0;
  while (::waitpid(maker->pid, &status, 0) < 0 && errno == EINTR) {
  }
  Ready r{0, -1, -1};
  const ssize_t n = ::read(maker->ready, &r, sizeof r);
  int err = 0;
  if (n != static_cast<ssize_t>(sizeof r)) {
    err = n < 0 && errno != EAGAIN ? errno : ECHILD;  // the helper died before reporting
  } else if (r.err != 0) {
    err = r.err;
  } else {
    const int ns = ::ioctl(r.sock, SIOCGSKNS);
    if (ns < 0 || ::setns(ns, CLONE_NEWNET) != 0 || ::setns(r.ipc, CLONE_NEWIPC) != 0) err = errno;
    if (ns >= 0) ::close(ns);
  }
  if (r.sock >= 0) ::close(r.sock);
  if (r.ipc >= 0) ::close(r.ipc);
  ::close(maker->ready);
  ::close(maker->ready_write);
  ::munmap(maker->stack, kHelperStackBytes);  // reaped above: nothing runs on it now
  *maker = Maker{};
  return err;
}

int listenLoopback(unsigned short port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -errno;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 512) != 0) {
    int e = errno;
    ::close(fd);
    return -e;
  }
  return fd;
}

void relayPending(int listen_fd, int channel) {
  for (;;) {
    int c = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR) continue;
      return;  // EAGAIN: nothing more pending (or the listener failed: nothing to do)
    }
    const char byte = 'c';
    (void)sendWithFd(channel, &byte, 1, c);  // a full channel or a gone proxy drops this one
    ::close(c);
  }
}

}  // namespace corral::sandbox::netns
