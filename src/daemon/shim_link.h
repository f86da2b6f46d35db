// SPDX-License-Identifier: Apache-2.0
// The daemon's end of a shim's control socket: start a shim, find one again, talk to it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "daemon/json_fields.h"

namespace corral::daemon {

struct ShimProcesses {
  int64_t shim_pid = 0, shim_start = 0, init_pid = 0, init_start = 0;
};

// Starts `core __session-shim dir` detached from the daemon (its own session, reparented
// away from the daemon, so neither the daemon's death nor its signals reach it), hands it
// config on stdin and waits for its ready line. An Error carries the shim's own message.
// stdin: "LENGTH\n", the config's JSON (LENGTH bytes), then `leases` (JSON, possibly empty) up
// to end of file: the shim reads the leases, which hold credential values, only once its
// sandbox's init has been cloned, so init's copy of the shim's memory never held them.
Result<ShimProcesses> startShim(const std::string& core, const std::string& dir, const Json& config, const std::string& leases = "");

class ShimLink {
 public:
  // Connects to dir/control.sock and proves the secret. A shim is accepted only if the
  // socket's peer (SO_PEERCRED) is the recorded shim process: pid and start time both, when
  // expect.shim_pid is set; never on the pid alone.
  static Result<ShimLink> connect(const std::string& dir, const std::string& secret, const ShimProcesses& expect);
  // One request, its reply (which must say "ok": true; otherwise its "error" is the Error).
  // A descriptor passed with the reply (a command's stdin or terminal) goes to *fd, else closed.
  Result<Json> call(const Json& req, UniqueFd* fd = nullptr);
  // Blocks until the shim process has exited (its pidfd, opened before its identity was
  // checked), up to timeout_ms.
  bool waitGone(int timeout_ms);
  // Whether the shim and its init both still run, from their pidfds (opened when the link was
  // made, each checked against the recorded start time): no /proc read. nullopt when init's
  // pidfd could not be had (then ask /proc).
  std::optional<bool> alive() const;
  const ShimProcesses& processes() const { return procs_; }

 private:
  ShimLink(UniqueFd fd, UniqueFd pidfd) : fd_(std::move(fd)), pidfd_(std::move(pidfd)) {}
  UniqueFd fd_, pidfd_, init_pidfd_;
  ShimProcesses procs_;
};

}  // namespace corral::daemon
