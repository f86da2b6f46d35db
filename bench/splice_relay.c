// SPDX-License-Identifier: Apache-2.0
// corral-splice-relay: the floor for one extra loopback hop, for bench/proxy_bench.py. A bare
// TCP relay that decides nothing and parses nothing: every connection accepted on
// 127.0.0.1:<any> is connected to 127.0.0.1:TARGET and relayed by splice(2) through one pipe
// per direction, one blocking thread per direction.
//   corral-splice-relay TARGET_PORT   prints "port=<n>" and serves until stdin closes.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kPipeSize = 1 << 20 };

static int target_port;

struct half {
  int from, to;
  pthread_t peer;  // the other direction's thread (joined by the first half)
};

// Moves bytes from -> pipe -> to until the source's EOF, then passes the half-close on. The
// same pipe size as corral's relay (src/net/proxy_splice.cc), so the two compare like for like.
static void* pump(void* arg) {
  struct half* h = arg;
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return NULL;
  (void)fcntl(p[1], F_SETPIPE_SZ, kPipeSize);
  for (;;) {
    ssize_t n = splice(h->from, NULL, p[1], NULL, kPipeSize, SPLICE_F_MOVE);
    if (n <= 0) break;
    while (n > 0) {
      ssize_t m = splice(p[0], NULL, h->to, NULL, (size_t)n, SPLICE_F_MOVE);
      if (m <= 0) goto out;
      n -= m;
    }
  }
out:
  shutdown(h->to, SHUT_WR);
  close(p[0]);
  close(p[1]);
  return NULL;
}

static void* serve(void* arg) {
  int client = (int)(long)arg;
  int up = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)target_port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  if (up >= 0 && connect(up, (struct sockaddr*)&a, sizeof a) == 0) {
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct half up_half = {client, up, 0}, down_half = {up, client, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, pump, &down_half) == 0) {
      pump(&up_half);
      pthread_join(t, NULL);
    }
  }
  if (up >= 0) close(up);
  close(client);
  return NULL;
}

static void* accept_loop(void* arg) {
  int lsock = (int)(long)arg;
  for (;;) {
    int c = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) continue;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, serve, (void*)(long)c) != 0) close(c);
    pthread_attr_destroy(&attr);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2 || (target_port = atoi(argv[1])) <= 0 || target_port > 65535) {
    fprintf(stderr, "usage: corral-splice-relay TARGET_PORT\n");
    return 2;
  }
  int lsock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (lsock < 0 || bind(lsock, (struct sockaddr*)&a, sizeof a) != 0 || listen(lsock, 4096) != 0 ||
      getsockname(lsock, (struct sockaddr*)&a, &len) != 0) {
    perror("corral-splice-relay: listen");
    return 1;
  }
  printf("port=%u\n", ntohs(a.sin_port));
  fflush(stdout);
  pthread_t t;
  if (pthread_create(&t, NULL, accept_loop, (void*)(long)lsock) != 0) return 1;
  char buf[256];
  while (read(STDIN_FILENO, buf, sizeof buf) > 0) {
  }
  return 0;
}
