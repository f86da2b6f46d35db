// SPDX-License-Identifier: Apache-2.0
// The API's listener: HTTP/1.1 (Boost.Beast) over a UNIX socket, SO_PEERCRED checked on
// every connection, each served on the thread that accepted it, up to a cap; sizes and idle
// time bounded.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "daemon/api.h"

namespace corral::daemon {

inline constexpr size_t kMaxHeaderBytes = size_t{16} * 1024;
inline constexpr size_t kMaxBodyBytes = 1 << 20;
// One upload (PUT .../files/...), streamed to the workspace; the session's --workspace-size
// caps it further.
inline constexpr uint64_t kMaxUploadBytes = uint64_t{16} << 30;
inline constexpr int kMaxConnections = 256;
inline constexpr int kIoTimeoutMs = 60'000;

struct ListenOptions {
  std::string socket_path;
  std::optional<gid_t> allow_group;  // socket 0660 and this group also served
};

class Server {
 public:
  // Makes the socket's directory (0700, or 0710 with the group) and binds the socket born
  // 0600 (0660), replacing a stale socket there (the caller holds the state directory's lock).
  static Result<Server> listen(const ListenOptions& opts);
  // Serves until stop_fd is readable (a signalfd), then returns. Connections are accepted and
  // served by a small pool of threads (server.cc); this one only waits.
  void serve(ApiContext& ctx, int stop_fd);
  // One accepted connection, on the calling thread: the peer checked, then served or refused.
  void handle(UniqueFd conn, ApiContext& ctx) const;

 private:
  Server(UniqueFd fd, ListenOptions opts) : fd_(std::move(fd)), opts_(std::move(opts)) {}
  bool allowed(const Peer& peer, int fd) const;
  UniqueFd fd_;
  ListenOptions opts_;
};

}  // namespace corral::daemon
