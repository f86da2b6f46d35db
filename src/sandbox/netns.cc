// SPDX-License-Identifier: Apache-2.0
// Loopback bring-up with one ioctl (cheaper than a netlink round trip).
#include "sandbox/netns.h"

#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace corral::sandbox::netns {

int bringUpLoopback() {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  ifreq ifr{};
  ::memcpy(ifr.ifr_name, "lo", 3);
  int err = 0;
  if (::ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) err = errno;
  if (err == 0) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
    if (::ioctl(fd, SIOCSIFFLAGS, &ifr) != 0) err = errno;
  }
  ::close(fd);
  return err;
}

}  // namespace corral::sandbox::netns
