// SPDX-License-Identifier: Apache-2.0
// The relay loop (relay.h): one poll loop over the port, the streams' sockets and, in the
// guest, init's channel of accepted connections.
#include "vm/relay.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace corral::vm::relay {
namespace {

// Reading the streams' sockets stops while this much waits for the port, and reading the
// port stops at twice it: so what the host buffers toward a guest that does not read stays
// bounded, while a peer that does read never sees both ends stop at once (data alone never
// passes the first mark).
constexpr size_t kOutCap = size_t{1} << 20;

void setNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

}  // namespace

Result<void> handToProxy(int channel, const UniqueFd& conn) {
  char byte = 'c';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  const int fd = conn.get();
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  for (;;) {
    if (::sendmsg(channel, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) return {};
    if (errno != EINTR) return sysError("hand a relayed connection to the egress proxy");
  }
}

void Mux::reset(uint32_t id) {
  queue(encode(Type::kReset, id));
  streams_.retire(id);
  locals_.erase(id);
}

// The peer's close reaches the socket once every byte before it is written.
void Mux::shutWhenDrained(uint32_t id, Local& l) {
  const Streams::State* s = streams_.find(id);
  if (l.pending.empty() && s && s->peer_closed && !l.shut_wr) {
    ::shutdown(l.fd.get(), SHUT_WR);
    l.shut_wr = true;
  }
}

void Mux::flushAcks() {
  for (auto& [id, l] : locals_)
    if (l.ack_due > 0) {
      queue(encodeWindow(id, l.ack_due));
      streams_.acked(id, l.ack_due);
      l.ack_due = 0;
    }
}

bool Mux::flushOut() {
  while (!out_.empty()) {
    const ssize_t n = ::write(port_, out_.data(), out_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (n <= 0) return false;
    out_.erase(0, static_cast<size_t>(n));
  }
  return true;
}

void Mux::acceptOne(int channel) {
  char byte;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (::recvmsg(channel, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) < 0) return;
  std::vector<UniqueFd> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.emplace_back(fd);
    }
  }
  if (fds.size() != 1) return;  // one fd per message is init's protocol: anything else is closed
  const std::optional<uint32_t> id = streams_.openNext();
  if (!id) return;  // kMaxStreams open: the client sees its connection closed
  setNonBlocking(fds.front().get());
  queue(encode(Type::kOpen, *id));
  locals_[*id].fd = std::move(fds.front());
  ++stats_.streams;
}

void Mux::onLocal(uint32_t id, Local& l, short revents) {
  if ((revents & (POLLOUT | POLLHUP | POLLERR)) && !l.pending.empty()) {
    const ssize_t n = ::send(l.fd.get(), l.pending.data(), l.pending.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno != EINTR && errno != EAGAIN) return reset(id);
    if (n > 0) {
      l.pending.erase(0, static_cast<size_t>(n));
      l.ack_due += static_cast<uint32_t>(n);
    }
  }
  shutWhenDrained(id, l);
  const uint32_t credit = streams_.sendCredit(id);
  if ((revents & (POLLIN | POLLHUP | POLLERR)) && !l.read_eof && credit > 0 && out_.size() < kOutCap) {
    char buf[kMaxData];
    const ssize_t n = ::recv(l.fd.get(), buf, std::min<size_t>(credit, sizeof buf), MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n < 0) return reset(id);
    if (n == 0) {
      l.read_eof = true;
      queue(encode(Type::kClose, id));
      streams_.closedLocal(id);
      return;
    }
    queue(encode(Type::kData, id, std::string_view(buf, static_cast<size_t>(n))));
    streams_.sent(id, static_cast<uint32_t>(n));
    (side_ == Side::kGuest ? stats_.bytes_up : stats_.bytes_down) += static_cast<uint64_t>(n);
  }
}

Result<void> Mux::onFrame(const Frame& f, const Connect& connect) {
  ASSIGN_OR_RETURN(Streams::Verdict v, streams_.receive(f));
  if (v == Streams::Verdict::kDrop) return {};
  switch (f.type) {
    case Type::kOpen: {
      ++stats_.streams;
      auto conn = connect ? connect() : Result<UniqueFd>(Error(Errc::kIo, "no proxy"));
      if (!conn) {
        queue(encode(Type::kReset, f.stream));
        streams_.retire(f.stream);
        return {};
      }
      setNonBlocking(conn->get());
      locals_[f.stream].fd = std::move(*conn);
      return {};
    }
    case Type::kData: {
      auto it = locals_.find(f.stream);
      if (it == locals_.end()) return {};
      it->second.pending += f.payload;
      (side_ == Side::kHost ? stats_.bytes_up : stats_.bytes_down) += f.payload.size();
      return {};
    }
    case Type::kReset:
      locals_.erase(f.stream);
      return {};
    case Type::kClose:
      if (auto it = locals_.find(f.stream); it != locals_.end()) shutWhenDrained(f.stream, it->second);
      return {};
    case Type::kWindow:
      return {};  // the table took the credit
  }
  return {};
}

Result<bool> Mux::onPort() {
  char buf[65536];
  const ssize_t n = ::read(port_, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n < 0) return sysError("net relay: read the port");
  if (n == 0) return false;  // the other end is gone: the run is over
  parser_.feed(std::string_view(buf, static_cast<size_t>(n)));
  return true;
}

Result<void> Mux::run(int stop_fd, int accept_channel, const Connect& connect) {
  setNonBlocking(port_);
  std::vector<pollfd> fds;
  std::vector<uint32_t> ids;
  for (;;) {
    // Streams with nothing left to say either way are retired; their socket closes.
    for (auto it = locals_.begin(); it != locals_.end();) {
      if (streams_.finished(it->first) && it->second.pending.empty() && it->second.ack_due == 0) {
        streams_.retire(it->first);
        it = locals_.erase(it);
      } else {
        ++it;
      }
    }
    if (out_.size() < kOutCap) flushAcks();
    fds.clear();
    ids.clear();
    const bool read_port = out_.size() < 2 * kOutCap;
    fds.push_back({port_, static_cast<short>((read_port ? POLLIN : 0) | (out_.empty() ? 0 : POLLOUT)), 0});
    fds.push_back({stop_fd, POLLIN, 0});
    const bool accepting = accept_channel >= 0 && streams_.open() < kMaxStreams && out_.size() < kOutCap;
    fds.push_back({accepting ? accept_channel : -1, POLLIN, 0});
    for (auto& [id, l] : locals_) {
      short ev = 0;
      if (!l.pending.empty()) ev |= POLLOUT;
      if (!l.read_eof && streams_.sendCredit(id) > 0 && out_.size() < kOutCap) ev |= POLLIN;
      fds.push_back({ev ? l.fd.get() : -1, ev, 0});
      ids.push_back(id);
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return sysError("net relay: poll");
    }
    if (fds[1].revents) return {};
    if ((fds[0].revents & POLLOUT) && !flushOut()) return Error(Errc::kIo, "net relay: the port closed");
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ASSIGN_OR_RETURN(bool open, onPort());
      if (!open) return {};
      for (;;) {
        ASSIGN_OR_RETURN(std::optional<Frame> f, parser_.next());
        if (!f) break;
        RETURN_IF_ERROR(onFrame(*f, connect));
      }
    }
    if (fds[2].revents & POLLIN) acceptOne(accept_channel);
    if (fds[2].revents & (POLLHUP | POLLERR)) accept_channel = -1;  // init is gone
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!fds[3 + i].revents) continue;
      auto it = locals_.find(ids[i]);
      if (it != locals_.end()) onLocal(ids[i], it->second, fds[3 + i].revents);
    }
  }
}

}  // namespace corral::vm::relay
