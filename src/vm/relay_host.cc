// SPDX-License-Identifier: Apache-2.0
// The host end of the VM's --net proxy relay (relay_host.h).
#include "vm/relay_host.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "base/log.h"

namespace corral::vm {

Result<std::unique_ptr<HostRelay>> HostRelay::listen(const std::string& run_dir, uid_t peer_uid, int proxy_channel) {
  std::unique_ptr<HostRelay> r(new HostRelay());
  r->path_ = run_dir + "/net";
  r->peer_uid_ = peer_uid;
  r->proxy_channel_ = proxy_channel;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (r->path_.size() >= sizeof addr.sun_path) return Error(Errc::kInvalidArgument, "--net proxy: the VM run directory's path is too long for a socket");
  std::memcpy(addr.sun_path, r->path_.c_str(), r->path_.size() + 1);
  r->listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!r->listener_.valid()) return sysError("--net proxy: socket");
  // Made 0600 from the start (umask), then given to the jail's uid: nobody else may connect.
  const mode_t old = ::umask(0177);
  const int bound = ::bind(r->listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::umask(old);
  if (bound != 0) return sysError("--net proxy: bind " + r->path_);
  if (::getuid() == 0 && ::chown(r->path_.c_str(), peer_uid, peer_uid) != 0) return sysError("--net proxy: chown " + r->path_);
  if (::listen(r->listener_.get(), 1) != 0) return sysError("--net proxy: listen");
  r->stop_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!r->stop_.valid()) return sysError("--net proxy: eventfd");
  return r;
}

void HostRelay::start() { thread_ = std::thread([this] { serve(); }); }

void HostRelay::serve() {
  UniqueFd port;
  while (!port.valid()) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      error_ = "poll the relay listener: " + std::string(std::strerror(errno));
      return;
    }
    if (fds[1].revents) return;
    UniqueFd c(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!c.valid()) continue;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(c.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != peer_uid_) {
      log::warn("vm_net_relay_peer_refused", "uid=" + std::to_string(cred.uid));
      continue;
    }
    port = std::move(c);
  }
  // QEMU alone: nobody else gets to connect once it has.
  listener_.reset();
  ::unlink(path_.c_str());
  relay::Mux mux(relay::Side::kHost, port.get());
  auto ran = mux.run(stop_.get(), -1, [this]() -> Result<UniqueFd> {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return sysError("socketpair");
    UniqueFd mine(sv[0]), theirs(sv[1]);
    RETURN_IF_ERROR(relay::handToProxy(proxy_channel_, theirs));
    return mine;
  });
  stats_ = mux.stats();
  if (!ran) {
    error_ = ran.error().message();
    log::warn("vm_net_relay_ended", "streams=" + std::to_string(stats_.streams) + " reason=\"" + error_ + "\"");
  }
}

void HostRelay::halt() noexcept {
  if (stopped_) return;
  stopped_ = true;
  const uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
  // Invariant: only this object's own thread is joined, once, and never from itself.
  if (thread_.joinable()) thread_.join();  // NOLINT(bugprone-exception-escape): join throws only on those misuses
}

nlohmann::ordered_json HostRelay::stop() {
  halt();
  nlohmann::ordered_json j = {{"streams", stats_.streams}, {"bytes_up", stats_.bytes_up}, {"bytes_down", stats_.bytes_down}};
  if (!error_.empty()) j["error"] = error_;
  return j;
}

HostRelay::~HostRelay() {
  halt();
  if (listener_.valid()) ::unlink(path_.c_str());
}

}  // namespace corral::vm
