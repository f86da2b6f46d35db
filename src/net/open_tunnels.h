// SPDX-License-Identifier: Apache-2.0
// The tcp-grant tunnels a sandbox has open right now, as the proxy knows them: what the SSH
// agent (ssh_agent.h) binds a signature to. Written on the proxy thread, read on the agent's.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace corral::net {

struct OpenTunnel {
  std::string destination;  // canonical host:port the grant admitted
  std::string resolved;     // the vetted ip:port dialled ("[::1]:22"): where the bytes go
};

class OpenTunnels {
 public:
  uint64_t add(OpenTunnel t) {
    std::lock_guard lock(mu_);
    open_.emplace(++next_, std::move(t));
    return next_;
  }
  void remove(uint64_t id) {
    std::lock_guard lock(mu_);
    open_.erase(id);
  }
  std::vector<OpenTunnel> snapshot() const {
    std::lock_guard lock(mu_);
    std::vector<OpenTunnel> out;
    for (const auto& [id, t] : open_) out.push_back(t);
    return out;
  }

 private:
  mutable std::mutex mu_;
  uint64_t next_ = 0;
  std::map<uint64_t, OpenTunnel> open_;
};

}  // namespace corral::net
