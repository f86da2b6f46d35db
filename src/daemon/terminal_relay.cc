// SPDX-License-Identifier: Apache-2.0
// Relaying a tty command's terminal over an upgraded connection, in bounded buffers.
#include "daemon/terminal_relay.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>

#include "base/log.h"
#include "base/read_fd.h"
#include "daemon/json_fields.h"
#include "daemon/terminal_frame.h"

namespace corral::daemon {
namespace {

using Clock = std::chrono::steady_clock;
using terminal::Frame;
constexpr int kLivenessCheckMs = 2000;
// After the status exists: what the terminal still holds is sent, but a background process
// that keeps writing to it does not hold the report back longer than this.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(500);
// After the last frame: how long what the client still sends is read and dropped (sendLast).
constexpr auto kDrainBeforeClose = std::chrono::milliseconds(500);

std::string errorFrame(const std::string& code, const std::string& message) {
  return terminal::encode(Frame::kError, dumpJson({{"error", {{"code", code}, {"message", message}}}}));
}

// The last frame before closing: written within a second or not at all. Then the connection
// is half-closed and what the client still sends is read and dropped until it closes its end,
// for half a second at most: closing a socket with unread bytes in it resets the connection
// (AF_UNIX gives the peer ECONNRESET), and a client still writing, say the rest of an oversized
// frame, would then lose the frame that says why.
void sendLast(int fd, std::string pending, const std::string& frame) {
  pending += frame;
  const auto until = Clock::now() + std::chrono::seconds(1);
  while (!pending.empty() && Clock::now() < until) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::send(fd, pending.data(), pending.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno != EAGAIN && errno != EINTR) return;
    if (n > 0) pending.erase(0, static_cast<size_t>(n));
  }
  if (::shutdown(fd, SHUT_WR) != 0) return;
  const auto drain_until = Clock::now() + kDrainBeforeClose;
  char sink[4096];
  for (auto now = Clock::now(); now < drain_until; now = Clock::now()) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(drain_until - now).count();
    if (::poll(&p, 1, static_cast<int>(left) + 1) <= 0) continue;
    const ssize_t n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return;  // the client closed (or broke) its end
  }
}

}  // namespace

RelayEnd relayTerminal(TerminalRelay& r) {
  // The kernel's share stays small too: a client that stops reading leaves at most this much
  // in the socket, then the relay stops reading the master.
  const int sndbuf = 64 * 1024;
  (void)::setsockopt(r.client, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  if (r.master.valid()) ::fcntl(r.master.get(), F_SETFL, ::fcntl(r.master.get(), F_GETFL) | O_NONBLOCK);
  UniqueFd ino(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  if (ino.valid()) ::inotify_add_watch(ino.get(), r.cmd_dir.c_str(), IN_MOVED_TO | IN_CREATE);
  const std::string status_path = r.cmd_dir + "/status.json";
  std::string in = std::move(r.early);  // client bytes not yet parsed (one frame at most)
  std::string to_master;                // one data frame's payload, not yet written
  std::string out = std::move(r.first);  // one frame for the client, not yet sent (a re-attach: two)
  size_t out_payload = r.first_output;               // of out, the bytes that are terminal output (the rest: its header)
  bool master_eof = !r.master.valid(), client_eof = false;
  std::optional<Clock::time_point> exited;  // when status.json was seen
  char buf[terminal::kMaxPayload];
  uint64_t in_bytes = 0, out_bytes = 0;
  const auto done = [&](const char* why, RelayEnd::Why end = RelayEnd::kRefused) {
    log::info("terminal_closed", "cmd=" + r.cmd_dir.substr(r.cmd_dir.rfind('/') + 1) + " reason=" + why +
                                     " in_bytes=" + std::to_string(in_bytes) + " out_bytes=" + std::to_string(out_bytes));
    // Output read but not sent goes to the scrollback of a detached terminal.
    RelayEnd e{end, {}};
    if (end == RelayEnd::kClientGone && out_payload) e.unsent = out.substr(out.size() - std::min(out.size(), out_payload));
    return e;
  };
  for (;;) {
    // Frames from the client, one at a time: the next is parsed once the last one's bytes
    // reached the terminal.
    while (to_master.empty()) {
      Frame type;
      std::string payload;
      auto got = terminal::takeFrame(in, &type, &payload);
      if (!got) {
        sendLast(r.client, out, errorFrame("invalid_frame", got.error().message()));
        return done("invalid_frame");
      }
      if (!*got) break;
      if (type == Frame::kData) {
        to_master = std::move(payload);
        in_bytes += to_master.size();
      } else if (type == Frame::kResize) {
        auto size = terminal::parseResize(payload);
        if (!size) {
          sendLast(r.client, out, errorFrame("invalid_frame", size.error().message()));
          return done("invalid_size");
        }
        const winsize ws{size->first, size->second, 0, 0};
        ::ioctl(r.master.get(), TIOCSWINSZ, &ws);  // the kernel signals SIGWINCH to its foreground group
      } else {
        sendLast(r.client, out, errorFrame("invalid_frame", "terminal: a client sends only data and resize frames"));
        return done("invalid_frame");
      }
    }
    if (!exited && ::access(status_path.c_str(), F_OK) == 0) exited = Clock::now();
    // The end: the status exists and the terminal was drained (or has had its time).
    if (exited && out.empty() && (master_eof || Clock::now() - *exited > kDrainAfterExit)) {
      auto text = [&]() -> Result<std::string> {
        UniqueFd f(::open(status_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!f.valid()) return sysError("open status.json");
        return readUpTo(f.get(), 65536, "status.json");
      }();
      auto j = text ? parseJson(*text) : Result<Json>(text.error());
      sendLast(r.client, "", terminal::encode(Frame::kExit, dumpJson(j ? *j : Json{{"exit_code", 125}, {"error", "unreadable status"}})));
      return done("exited", RelayEnd::kExited);
    }
    pollfd fds[3] = {{r.client, 0, 0}, {r.master.get(), 0, 0}, {ino.get(), POLLIN, 0}};
    if (!client_eof && to_master.empty() && in.size() < terminal::kHeaderBytes + terminal::kMaxPayload) fds[0].events |= POLLIN;
    if (!out.empty()) fds[0].events |= POLLOUT;
    if (!master_eof && out.empty()) fds[1].events |= POLLIN;
    if (!master_eof && !to_master.empty()) fds[1].events |= POLLOUT;
    // Not polled at all when nothing is wanted of it: a hung-up master (or client) would
    // otherwise report POLLHUP at once, again and again, while the relay waits on the other.
    for (pollfd& f : fds)
      if (f.events == 0) f.fd = -1;
    const int timeout = exited ? 50 : kLivenessCheckMs;
    const int rc = ::poll(fds, 3, timeout);
    if (rc < 0 && errno != EINTR) return done("poll");
    if (rc == 0 && !exited && !r.alive()) {
      sendLast(r.client, out, errorFrame("lost", "the session's shim is gone"));
      return done("lost", RelayEnd::kLost);
    }
    if (fds[2].revents & POLLIN) {
      char events[4096];
      while (::read(ino.get(), events, sizeof events) > 0) {
      }
    }
    if (fds[0].revents & POLLOUT) {
      const ssize_t n = ::send(r.client, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EINTR) return done("client_gone", RelayEnd::kClientGone);
      if (n > 0) {
        out.erase(0, static_cast<size_t>(n));
        out_payload = std::min(out_payload, out.size());
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      const size_t room = terminal::kHeaderBytes + terminal::kMaxPayload - in.size();
      const ssize_t n = room ? ::recv(r.client, buf, std::min(room, sizeof buf), MSG_DONTWAIT) : -1;
      // The client hung up: its terminal stays, detached (the caller keeps the master).
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR && room)) return done("client_gone", RelayEnd::kClientGone);
      if (n > 0) in.append(buf, static_cast<size_t>(n));
    }
    if (fds[1].revents & POLLOUT) {
      const ssize_t n = ::write(r.master.get(), to_master.data(), to_master.size());
      if (n > 0) to_master.erase(0, static_cast<size_t>(n));
      else if (n < 0 && errno != EAGAIN && errno != EINTR) to_master.clear();  // EIO: nobody reads the terminal now
    }
    const bool polled_master = fds[1].events & POLLIN;
    if (polled_master && out.empty() && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = ::read(r.master.get(), buf, sizeof buf);
      if (n > 0) {
        out = terminal::encode(Frame::kData, std::string_view(buf, static_cast<size_t>(n)));
        out_payload = static_cast<size_t>(n);
        out_bytes += static_cast<uint64_t>(n);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        master_eof = true;  // EIO: every copy of the slave is closed
      }
    } else if (exited && polled_master && !master_eof) {
      master_eof = true;  // nothing more is waiting in the terminal: the report goes now
    }
  }
}

}  // namespace corral::daemon
