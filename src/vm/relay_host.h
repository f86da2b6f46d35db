// SPDX-License-Identifier: Apache-2.0
// The host end of --net proxy for one VM: a listening UNIX socket in the run directory that
// QEMU's corral.net chardev connects to (bound read-only into its jail as /vm/net), and a
// thread that accepts QEMU alone and relays the guest's streams to the run's egress proxy.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "base/unique_fd.h"
#include "vm/relay.h"

namespace corral::vm {

class HostRelay {
 public:
  // Listens on run_dir/net, mode 0600, owned by peer_uid (the jail's host uid); only a
  // connection from that uid is taken, and only the first. proxy_channel: the egress proxy's
  // sandbox end (SandboxSpec::proxy.channel), borrowed for the run.
  static Result<std::unique_ptr<HostRelay>> listen(const std::string& run_dir, uid_t peer_uid, int proxy_channel);
  ~HostRelay();  // stops and joins the thread
  HostRelay(const HostRelay&) = delete;
  HostRelay& operator=(const HostRelay&) = delete;

  const std::string& socketPath() const { return path_; }
  void start();
  // Stops the relay (every stream closes) and returns what it did: streams, bytes each way
  // and, when the guest broke the protocol, why the relay ended.
  nlohmann::ordered_json stop();

 private:
  HostRelay() = default;
  void serve();
  void halt() noexcept;  // signals the thread and joins it
  std::string path_;
  uid_t peer_uid_ = 0;
  int proxy_channel_ = -1;
  UniqueFd listener_, stop_;
  std::thread thread_;
  relay::Stats stats_;
  std::string error_;
  bool stopped_ = false;
};

}  // namespace corral::vm
