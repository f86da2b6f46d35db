// SPDX-License-Identifier: Apache-2.0
// corral-probe network ops: socket families, TCP and abstract-socket connects, interfaces.
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "probe.h"

static const struct {
  const char *name;
  int value;
} kFamilies[] = {
    {"unix", AF_UNIX}, {"inet", AF_INET}, {"inet6", AF_INET6}, {"packet", AF_PACKET},
    {"netlink", AF_NETLINK}, {"vsock", 40}, {"key", AF_KEY}, {"alg", 38}, {"xdp", 44},
    {"bluetooth", AF_BLUETOOTH}, {"can", 29}, {"tipc", 30}, {"rds", 21},
}, kTypes[] = {
    {"stream", SOCK_STREAM}, {"dgram", SOCK_DGRAM}, {"raw", SOCK_RAW}, {"seqpacket", SOCK_SEQPACKET},
};

static int lookup(const char *name, int table) {
  size_t n = table ? sizeof kTypes / sizeof kTypes[0] : sizeof kFamilies / sizeof kFamilies[0];
  for (size_t i = 0; i < n; ++i) {
    const char *candidate = table ? kTypes[i].name : kFamilies[i].name;
    if (strcmp(candidate, name) == 0) return table ? kTypes[i].value : kFamilies[i].value;
  }
  long long v = probe_number(name);
  return v >= 0 && v < 256 ? (int)v : -1;
}

static int op_socket(int argc, char **argv) {
  if (argc < 3 || argc > 4) return probe_usage("socket FAMILY TYPE [PROTO]");
  int family = lookup(argv[1], 0), type = lookup(argv[2], 1);
  long long proto = argc == 4 ? probe_number(argv[3]) : 0;
  if (family < 0 || type < 0 || proto < 0) return probe_usage("socket: bad FAMILY, TYPE or PROTO");
  int fd = socket(family, type | SOCK_CLOEXEC, (int)proto);
  if (fd < 0) return probe_errno(errno, NULL);
  close(fd);
  return probe_ok(NULL);
}

static void set_timeouts(int fd) {
  struct timeval tv = {2, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

static int op_connect_tcp(int argc, char **argv) {
  long long port = argc == 3 ? probe_number(argv[2]) : -1;
  if (port <= 0 || port > 65535) return probe_usage("connect-tcp HOST PORT");
  struct sockaddr_in v4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  struct sockaddr_in6 v6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
  int is_v6 = strchr(argv[1], ':') != NULL;
  if (inet_pton(is_v6 ? AF_INET6 : AF_INET, argv[1], is_v6 ? (void *)&v6.sin6_addr : (void *)&v4.sin_addr) != 1)
    return probe_usage("connect-tcp: HOST must be a numeric address");
  int fd = socket(is_v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return probe_errno(errno, "stage=socket");
  set_timeouts(fd);
  int rc = is_v6 ? connect(fd, (struct sockaddr *)&v6, sizeof v6) : connect(fd, (struct sockaddr *)&v4, sizeof v4);
  int err = errno;
  close(fd);
  return rc == 0 ? probe_ok(NULL) : probe_errno(err, NULL);
}

static int op_connect_abstract(int argc, char **argv) {
  if (argc != 2 || strlen(argv[1]) > 100) return probe_usage("connect-abstract NAME");
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  size_t len = strlen(argv[1]);
  memcpy(sun.sun_path + 1, argv[1], len);  // sun_path[0] == '\0': the abstract namespace
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return probe_errno(errno, "stage=socket");
  int rc = connect(fd, (struct sockaddr *)&sun, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len));
  int err = errno;
  close(fd);
  return rc == 0 ? probe_ok(NULL) : probe_errno(err, NULL);
}

// Control for net.loopback-only: loopback inside works, so a refused host port is isolation.
static int op_loopback_selftest(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("loopback-selftest");
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof addr;
  int srv = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (srv < 0) return probe_errno(errno, "stage=socket");
  if (bind(srv, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(srv, 1) != 0 ||
      getsockname(srv, (struct sockaddr *)&addr, &alen) != 0)
    return probe_errno(errno, "stage=listen");
  int cli = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  set_timeouts(cli);
  if (connect(cli, (struct sockaddr *)&addr, sizeof addr) != 0) return probe_errno(errno, "stage=connect");
  int conn = accept(srv, NULL, NULL);
  if (conn < 0) return probe_errno(errno, "stage=accept");
  close(conn);
  close(cli);
  close(srv);
  return probe_ok("port=%d", ntohs(addr.sin_port));
}

// Interface names from /proc/net/dev (netlink may be filtered; /proc/net is per netns).
static int op_net_ifaces(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("net-ifaces");
  char buf[16384], out[1024] = "";
  long n = probe_slurp("/proc/net/dev", buf, sizeof buf);
  if (n < 0) return probe_errno((int)-n, NULL);
  int count = 0, line_no = 0;
  for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    if (line_no++ < 2) continue;  // two header lines
    line += strspn(line, " ");
    size_t len = strcspn(line, ":");
    size_t o = strlen(out);
    snprintf(out + o, sizeof out - o, "%s%.*s", count++ ? "," : "", (int)len, line);
  }
  return probe_ok("count=%d ifaces=%s", count, out);
}

// Interface names as getifaddrs() reports them: glibc asks NETLINK_ROUTE (RTM_GETLINK and
// RTM_GETADDR dumps), as if_nameindex(), libuv and `ip addr` do.
static int op_getifaddrs(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("getifaddrs");
  struct ifaddrs *list = NULL;
  if (getifaddrs(&list) != 0) return probe_errno(errno, NULL);
  char out[1024] = "";
  int count = 0;
  for (struct ifaddrs *a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_PACKET) continue;  // one entry per link
    size_t o = strlen(out);
    snprintf(out + o, sizeof out - o, "%s%s", count++ ? "," : "", a->ifa_name);
  }
  freeifaddrs(list);
  return probe_ok("count=%d ifaces=%s", count, out);
}

// A change through NETLINK_ROUTE: RTM_NEWLINK setting lo up. Harmless wherever it runs (lo is
// up already, inside and on the host), but the kernel asks for CAP_NET_ADMIN over the
// namespace before it looks at the request: EPERM without it, ok with it.
static int op_netlink_change(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("netlink-change");
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return probe_errno(errno, "stage=socket");
  set_timeouts(fd);
  struct {
    struct nlmsghdr nh;
    struct ifinfomsg ifi;
  } req = {
      .nh = {.nlmsg_len = sizeof req, .nlmsg_type = RTM_NEWLINK, .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK, .nlmsg_seq = 1},
      .ifi = {.ifi_family = AF_UNSPEC, .ifi_index = (int)if_nametoindex("lo"), .ifi_flags = IFF_UP, .ifi_change = IFF_UP},
  };
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  if (sendto(fd, &req, sizeof req, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
    int err = errno;
    close(fd);
    return probe_errno(err, "stage=send");
  }
  char buf[4096];
  ssize_t n = recv(fd, buf, sizeof buf, 0);
  int err = errno;
  close(fd);
  if (n < 0) return probe_errno(err, "stage=recv");
  struct nlmsghdr *h = (struct nlmsghdr *)buf;
  if (!NLMSG_OK(h, (size_t)n) || h->nlmsg_type != NLMSG_ERROR) return probe_refused("stage=ack");
  int code = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
  return code == 0 ? probe_ok(NULL) : probe_errno(-code, "stage=ack");
}

const struct probe_op probe_net_ops[] = {
    {"socket", "FAMILY TYPE [PROTO] (unix inet inet6 packet netlink vsock key alg xdp ...)", op_socket},
    {"connect-tcp", "HOST PORT", op_connect_tcp},
    {"connect-abstract", "NAME", op_connect_abstract},
    {"loopback-selftest", "", op_loopback_selftest},
    {"net-ifaces", "", op_net_ifaces},
    {"getifaddrs", "(interface names through NETLINK_ROUTE)", op_getifaddrs},
    {"netlink-change", "(RTM_NEWLINK: set lo up)", op_netlink_change},
    {NULL, NULL, NULL},
};
