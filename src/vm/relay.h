// SPDX-License-Identifier: Apache-2.0
// The --net proxy relay loop, the same on both ends of the corral.net virtio-serial port: it
// carries each of the command's TCP connections as one stream of relay frames
// (relay_frame.h). The guest's streams come from the command sandbox's init (one accepted
// connection per SCM_RIGHTS message, as the namespace backend hands them to the proxy); the
// host gives each stream the guest opens to the run's egress proxy the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"
#include "vm/relay_frame.h"

namespace corral::vm::relay {

struct Stats {
  uint64_t streams = 0;     // opened
  uint64_t bytes_up = 0;    // guest -> host, data bytes
  uint64_t bytes_down = 0;  // host -> guest
};

class Mux {
 public:
  // The local end of a stream the guest opened (host side).
  using Connect = std::function<Result<UniqueFd>()>;
  // port: the relay port's fd (made non-blocking here), borrowed.
  Mux(Side side, int port) : side_(side), port_(port), parser_(side), streams_(side) {}
  // Until stop_fd is readable ({}), the port closes ({}), or the peer breaks the protocol or
  // the port fails (the error). accept_channel (guest): the SOCK_SEQPACKET end init hands
  // connections to; -1 on the host. connect: the host's, unused on the guest. Every local
  // socket is closed when run returns.
  Result<void> run(int stop_fd, int accept_channel, const Connect& connect);
  const Stats& stats() const { return stats_; }

 private:
  struct Local {
    UniqueFd fd;
    std::string pending;   // from the peer, not yet written to fd (at most kWindow)
    uint32_t ack_due = 0;  // written to fd, not yet acknowledged to the peer
    bool read_eof = false;
    bool shut_wr = false;
  };
  Result<bool> onPort();  // false: the port closed
  Result<void> onFrame(const Frame& f, const Connect& connect);
  void acceptOne(int channel);
  void onLocal(uint32_t id, Local& l, short revents);
  void reset(uint32_t id);
  void shutWhenDrained(uint32_t id, Local& l);
  void queue(std::string_view bytes) { out_.append(bytes); }
  void flushAcks();
  bool flushOut();

  Side side_;
  int port_;
  Parser parser_;
  Streams streams_;
  std::map<uint32_t, Local> locals_;
  std::string out_;  // frames for the port, in order
  Stats stats_;
};

// Host side: hands `conn` to the egress proxy over its channel (one fd per SOCK_SEQPACKET
// message), as the namespace sandbox's init does.
Result<void> handToProxy(int channel, const UniqueFd& conn);

}  // namespace corral::vm::relay
