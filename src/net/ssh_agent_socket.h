// SPDX-License-Identifier: Apache-2.0
// The listening socket behind a sandbox's SSH_AUTH_SOCK (--ssh-key): made by the launcher
// before the clone, because the socket file is bound into the sandbox like a --ro-bind. It
// lives in a fresh 0700 directory of the caller, so no other host user can reach it; the
// socket itself is 0666, so the sandbox's uid can connect through its bind mount.
#pragma once

#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::net {

// Where the sandbox finds it (SSH_AUTH_SOCK).
inline constexpr char kSandboxAgentSocket[] = "/run/corral/ssh-agent.sock";

class AgentSocket {
 public:
  static Result<AgentSocket> create();
  AgentSocket(AgentSocket&& o) noexcept : dir_(std::move(o.dir_)), listener_(std::move(o.listener_)) { o.dir_.clear(); }
  AgentSocket& operator=(AgentSocket&&) = delete;
  AgentSocket(const AgentSocket&) = delete;
  ~AgentSocket();  // removes the socket file and its directory
  std::string hostPath() const { return dir_ + "/agent.sock"; }
  // The listening socket, for the agent (SshAgentConfig::listener); the file stays.
  UniqueFd takeListener() { return std::move(listener_); }

 private:
  AgentSocket(std::string dir, UniqueFd listener) : dir_(std::move(dir)), listener_(std::move(listener)) {}
  std::string dir_;
  UniqueFd listener_;
};

}  // namespace corral::net
