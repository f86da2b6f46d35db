// SPDX-License-Identifier: Apache-2.0
// The agent's listening socket in a private directory (ssh_agent_socket.h).
#include "net/ssh_agent_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace corral::net {

Result<AgentSocket> AgentSocket::create() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp") + "/corral-ssh-agent-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) return sysError("--ssh-key: agent directory " + templ);
  AgentSocket s(templ, UniqueFd());
  const std::string path = s.hostPath();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return Error(Errc::kInvalidArgument, "--ssh-key: agent socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sysError("--ssh-key: agent socket");
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return sysError("--ssh-key: bind " + path);
  // The directory (0700, ours) keeps other host users out; the mode lets the sandbox's uid in.
  if (::chmod(path.c_str(), 0666) != 0) return sysError("--ssh-key: chmod " + path);
  if (::listen(fd.get(), 16) != 0) return sysError("--ssh-key: listen " + path);
  s.listener_ = std::move(fd);
  return s;
}

AgentSocket::~AgentSocket() {
  if (dir_.empty()) return;
  ::unlink(hostPath().c_str());
  ::rmdir(dir_.c_str());
}

}  // namespace corral::net
