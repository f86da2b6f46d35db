// SPDX-License-Identifier: Apache-2.0
// The test's private network namespace: unshare, lo up, /32 aliases, a bind-mounted /etc/hosts.
#include "private_netns.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

namespace corral::testing {
namespace {

std::string failed(const std::string& what) { return what + ": " + std::strerror(errno); }

bool writeFile(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

std::string setIfaceAddr(int sock, const std::string& label, const std::string& addr) {
  ifreq ifr{};
  std::snprintf(ifr.ifr_name, IFNAMSIZ, "%s", label.c_str());
  auto* sin = reinterpret_cast<sockaddr_in*>(&ifr.ifr_addr);
  sin->sin_family = AF_INET;
  if (::inet_pton(AF_INET, addr.c_str(), &sin->sin_addr) != 1) return "not an IPv4 address: " + addr;
  if (::ioctl(sock, SIOCSIFADDR, &ifr) != 0) return failed("SIOCSIFADDR " + label + " " + addr);
  ::inet_pton(AF_INET, "255.255.255.255", &sin->sin_addr);
  if (::ioctl(sock, SIOCSIFNETMASK, &ifr) != 0) return failed("SIOCSIFNETMASK " + label);
  return "";
}

}  // namespace

std::string enterPrivateNetwork(const std::vector<std::string>& addresses, const std::string& hosts) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  const int flags = CLONE_NEWNET | CLONE_NEWNS | (uid == 0 ? 0 : CLONE_NEWUSER);
  if (::unshare(flags) != 0) return failed("unshare(CLONE_NEWNET|CLONE_NEWNS" + std::string(uid == 0 ? ")" : "|CLONE_NEWUSER)"));
  if (uid != 0) {
    if (!writeFile("/proc/self/setgroups", "deny") ||
        !writeFile("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") ||
        !writeFile("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1"))
      return failed("writing the user namespace's id maps");
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return failed("making / private");
  const int sock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return failed("socket");
  ifreq ifr{};
  std::snprintf(ifr.ifr_name, IFNAMSIZ, "lo");
  std::string why;
  if (::ioctl(sock, SIOCGIFFLAGS, &ifr) != 0) why = failed("SIOCGIFFLAGS lo");
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
  if (why.empty() && ::ioctl(sock, SIOCSIFFLAGS, &ifr) != 0) why = failed("SIOCSIFFLAGS lo up");
  for (size_t i = 0; why.empty() && i < addresses.size(); ++i) why = setIfaceAddr(sock, "lo:" + std::to_string(i), addresses[i]);
  ::close(sock);
  if (!why.empty() || hosts.empty()) return why;
  return bindOverFile("/etc/hosts", hosts);
}

std::string bindOverFile(const std::string& path, const std::string& content) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string file = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/corral-bind-" +
                           std::to_string(::getpid()) + "-" + std::to_string(std::hash<std::string>{}(path));
  if (!writeFile(file, content)) return failed("writing " + file);
  const bool bound = ::mount(file.c_str(), path.c_str(), nullptr, MS_BIND, nullptr) == 0;
  const std::string err = bound ? "" : failed("bind-mounting " + file + " over " + path);
  ::unlink(file.c_str());  // the mount keeps the file alive; nothing is left behind
  return err;
}

}  // namespace corral::testing
