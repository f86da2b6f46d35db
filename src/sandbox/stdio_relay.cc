// SPDX-License-Identifier: Apache-2.0
// Stdio relay: pipes in place of caller fds the sandbox could use to change host inodes.
#include "sandbox/stdio_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <system_error>
#include <thread>

#include "sandbox/job_signals.h"

namespace corral::sandbox {
namespace {

constexpr size_t kChunk = size_t{64} * 1024;

void setNonBlocking(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK);
}

// write(2) to a pipe whose reader may be gone, without a SIGPIPE killing corral: the signal
// is blocked for this thread and, if the write raised it, consumed before unblocking.
ssize_t writeNoSigpipe(int fd, const char* data, size_t len) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigset_t pending;
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  ssize_t n = ::write(fd, data, len);
  const int err = errno;
  if (n < 0 && err == EPIPE && !was_pending) {
    const timespec zero{0, 0};
    while (::sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return n;
}

// Writes all of data to the caller's fd, waiting if it is non-blocking and full (on an output
// pump's thread only). False when the caller's side takes no more (its reader is gone, a full
// disk, a file-size limit).
bool writeAll(int fd, const char* data, size_t len) {
  while (len > 0) {
    ssize_t n = writeNoSigpipe(fd, data, len);
    if (n > 0) {
      data += n;
      len -= static_cast<size_t>(n);
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
    } else if (!(n < 0 && errno == EINTR)) {
      return false;
    }
  }
  return true;
}

// A socket cannot be reopened through /proc/self/fd, but the object itself belongs to the
// host's network namespace: a TCP socket (inetd, systemd Accept=yes) can be disconnected with
// connect(AF_UNSPEC) and connected anywhere, a UDP or AF_UNIX datagram socket can sendto any
// host address (abstract sockets included), a listening one can accept host connections. A
// connected AF_UNIX stream or seqpacket socket (a socketpair, as libuv and others use for
// stdio) can only talk to its peer: that one is handed over, every other socket is relayed.
bool connectedUnixStream(int fd) {
  int domain = 0, type = 0, listening = 0;
  socklen_t len = sizeof domain;
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_UNIX) return false;
  len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || (type != SOCK_STREAM && type != SOCK_SEQPACKET))
    return false;
  len = sizeof listening;
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening != 0) return false;
  sockaddr_storage peer{};
  len = sizeof peer;
  return ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0;
}

}  // namespace

// One output stream's copy, on a thread of its own: blocking reads from corral's end of the
// pipe, blocking writes to the caller's fd, until every writer in the sandbox is gone. The
// thread is detached and shares this object, so a copy still blocked on a caller who never
// reads can be abandoned (drain) without anything it uses going away under it: it writes to
// its own duplicate of the caller's fd, never to a number the caller may close and reuse.
struct StdioRelay::OutputPump {
  UniqueFd from;
  UniqueFd to_fd;
  uint64_t file_limit = 0;  // the caller's fd is a regular file: RLIMIT_FSIZE's rule, else 0
  UniqueFd done;            // an eventfd, readable once the copy has ended

  // How many of n bytes a write at the file's position may add under file_limit (as
  // RLIMIT_FSIZE would allow the command's own write: up to the limit, then nothing).
  size_t allowed(size_t n) const {
    if (file_limit == 0) return n;
    const int to = to_fd.get();
    const int flags = ::fcntl(to, F_GETFL);
    struct stat st{};
    off_t pos = 0;
    if (flags >= 0 && (flags & O_APPEND) != 0) pos = ::fstat(to, &st) == 0 ? st.st_size : 0;
    else pos = ::lseek(to, 0, SEEK_CUR);
    if (pos < 0) return n;
    const uint64_t at = static_cast<uint64_t>(pos);
    return at >= file_limit ? 0 : static_cast<size_t>(std::min<uint64_t>(n, file_limit - at));
  }

  // Ends when the sandbox's writers are gone, or when the caller's side takes no more: its
  // reader went (EPIPE), its disk is full, its own RLIMIT_FSIZE or --file-size is reached.
  // Then the pipe closes and the command's next write fails (EPIPE; SIGPIPE by default), as
  // its own write would have failed on the caller's fd: `corral exec -- yes | head -1` ends.
  // (Reading on and dropping the rest, as before, left `yes` running for ever.)
  void run() {
    char buf[kChunk];
    for (;;) {
      const ssize_t n = ::read(from.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      const size_t ok = allowed(static_cast<size_t>(n));
      if (!writeAll(to_fd.get(), buf, ok) || ok < static_cast<size_t>(n)) break;
    }
    from.reset();
    const uint64_t one = 1;
    while (::write(done.get(), &one, sizeof one) < 0 && errno == EINTR) {
    }
  }
};

bool stdioSafeToHandOver(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return true;  // not open: nothing is handed over
  if (S_ISSOCK(st.st_mode)) return connectedUnixStream(fd);
  // A pipe, anonymous or named, is never handed over. Whoever holds a pipe's fd can resize
  // the pipe itself (F_SETPIPE_SZ acts on the pipe, not the open file description), which the
  // host's next reader or writer of it then shares; a uid the inode lets in can reopen it
  // through /proc/self/fd in the other direction (stdin for writing feeds the next host
  // reader); and a named FIFO is a host inode. So every pipe is relayed, and the command may
  // resize the pipes it gets (corral's own) as freely as the ones it makes.
  if (S_ISFIFO(st.st_mode)) return false;
  // /dev/null and friends: owned by root (or someone else), not a terminal. A terminal the
  // sandbox could chmod, make its controlling tty or leave in raw mode is relayed.
  if (S_ISCHR(st.st_mode)) return !::isatty(fd) && (st.st_uid == 0 || st.st_uid != ::getuid());
  return false;
}

Result<StdioRelay> StdioRelay::plan(const int given[3], uint64_t file_size_limit) {
  StdioRelay relay;
  relay.file_size_limit_ = file_size_limit;
  for (int n = 0; n <= 2; ++n) {
    const int host = given[n] >= 0 ? given[n] : n;
    if (stdioSafeToHandOver(host)) continue;
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return sysError("stdio relay: pipe");
    UniqueFd read_end(p[0]), write_end(p[1]);
    Stream s;
    s.n = n;
    s.host = host;
    s.ours = std::move(n == 0 ? write_end : read_end);
    s.theirs = std::move(n == 0 ? read_end : write_end);
    // init moves the sandbox's end onto 0..2 before fd 3 becomes its sync socket.
    if (s.theirs.get() < 3) {
      UniqueFd high(::fcntl(s.theirs.get(), F_DUPFD_CLOEXEC, 3));
      if (!high.valid()) return sysError("stdio relay: dup");
      s.theirs = std::move(high);
    }
    setNonBlocking(s.ours.get(), true);
    relay.streams_.push_back(std::move(s));
  }
  return relay;
}

int StdioRelay::sandboxFd(int n) const {
  for (const Stream& s : streams_)
    if (s.n == n) return s.theirs.get();
  return -1;
}

void StdioRelay::closeSandboxEnds() {
  for (Stream& s : streams_) s.theirs.reset();
}

Result<void> StdioRelay::startOutput() {
  for (Stream& s : streams_) {
    if (s.n == 0 || s.pump) continue;
    auto pump = std::make_shared<OutputPump>();
    pump->to_fd.reset(::fcntl(s.host, F_DUPFD_CLOEXEC, 3));
    if (!pump->to_fd.valid()) return sysError("stdio relay: dup");
    struct stat st{};
    if (::fstat(s.host, &st) == 0 && S_ISREG(st.st_mode)) pump->file_limit = file_size_limit_;
    pump->done.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!pump->done.valid()) return sysError("stdio relay: eventfd");
    setNonBlocking(s.ours.get(), false);
    pump->from = std::move(s.ours);
    // The thread starts with every signal blocked: a signal for corral (the terminal's Ctrl-C)
    // must reach the supervisor's signalfd, never this thread's default action.
    sigset_t all, old;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = 0;
    try {
      std::thread([pump] { pump->run(); }).detach();
    } catch (const std::system_error& e) {
      err = e.code().value();
    }
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (err != 0) {
      s.ours = std::move(pump->from);
      return Error(err, "stdio relay: thread");
    }
    s.pump = std::move(pump);
  }
  return {};
}

void StdioRelay::addPollFds(std::vector<pollfd>& fds) const {
  for (const Stream& s : streams_) {
    if (s.n != 0) continue;
    // Read the caller's stdin only when the last chunk is in the pipe (back-pressure).
    const bool want_host = s.ours.valid() && !s.host_eof && s.pending.empty();
    fds.push_back({want_host ? s.host : -1, POLLIN, 0});
    fds.push_back({s.ours.valid() && !s.pending.empty() ? s.ours.get() : -1, POLLOUT, 0});
  }
}

void StdioRelay::onReady(const std::vector<pollfd>& fds, size_t first) {
  size_t i = first;
  for (Stream& s : streams_) {
    if (s.n != 0) continue;
    pumpIn(s, fds[i].revents, fds[i + 1].revents);
    i += 2;
  }
}

void StdioRelay::pumpIn(Stream& s, short revents_host, short revents_pipe) {
  if (!s.ours.valid()) return;
  if (revents_host && s.pending.empty()) {
    char buf[kChunk];
    ssize_t n = ::read(s.host, buf, sizeof buf);
    if (n > 0) {
      s.pending.assign(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EIO && ::isatty(s.host) && ::tcgetpgrp(s.host) > 0 &&
               ::tcgetpgrp(s.host) != ::getpgrp()) {
      background_read_ = true;  // not an end: the job reads again once in the foreground
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      s.host_eof = true;
    }
  }
  if (revents_pipe & (POLLERR | POLLHUP)) {  // the sandbox closed its stdin
    s.ours.reset();
    return;
  }
  if (!s.pending.empty()) {
    ssize_t n = writeNoSigpipe(s.ours.get(), s.pending.data(), s.pending.size());
    if (n > 0) {
      s.pending.erase(0, static_cast<size_t>(n));
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
      s.ours.reset();
      return;
    }
  }
  if (s.host_eof && s.pending.empty()) s.ours.reset();  // EOF for the sandbox
}

void StdioRelay::drain(int signals, int limit_ms) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(limit_ms < 0 ? 0 : limit_ms);
  for (;;) {
    std::vector<pollfd> fds;
    for (const Stream& s : streams_)
      if (s.pump) fds.push_back({s.pump->done.get(), POLLIN, 0});
    if (fds.empty()) break;
    const size_t pumps = fds.size();
    if (signals >= 0) fds.push_back({signals, POLLIN, 0});
    int wait_ms = -1;
    if (limit_ms >= 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) break;
      wait_ms = static_cast<int>(left);
    }
    const int r = ::poll(fds.data(), fds.size(), wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;  // the limit: what the caller has not taken by now is dropped
    if (fds.size() > pumps && (fds[pumps].revents & POLLIN)) {
      signalfd_siginfo si{};
      const bool got = ::read(signals, &si, sizeof si) == static_cast<ssize_t>(sizeof si);
      if (got && endsTheWait(static_cast<int>(si.ssi_signo)))
        break;  // told to stop: the sandbox is gone, only its last output is left undelivered
      // A job-control stop still stops corral (there is no sandbox left to stop with it).
      if (got && isJobStop(static_cast<int>(si.ssi_signo))) ::kill(::getpid(), SIGSTOP);
    }
    size_t i = 0;
    for (Stream& s : streams_) {
      if (!s.pump) continue;
      if (fds[i++].revents & POLLIN) s.pump.reset();  // delivered everything (its thread has ended)
    }
  }
  for (Stream& s : streams_) {
    s.pump.reset();  // one still blocked on the caller keeps its own share until it ends
    s.ours.reset();
  }
}

}  // namespace corral::sandbox
