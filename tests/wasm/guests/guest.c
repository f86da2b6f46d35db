// SPDX-License-Identifier: Apache-2.0
// The adversarial test guest: an unmodified C program (wasi-libc) that tries one thing per
// mode and prints what happened, one "key=value" line per attempt.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static const char* errname(int e) {
  switch (e) {
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENOTCAPABLE: return "ENOTCAPABLE";
    case ELOOP: return "ELOOP";
    case EROFS: return "EROFS";
    case EXDEV: return "EXDEV";
    case ENOTDIR: return "ENOTDIR";
    case ENOSYS: return "ENOSYS";
    case EEXIST: return "EEXIST";
    case EISDIR: return "EISDIR";
    case EBADF: return "EBADF";
    case EINVAL: return "EINVAL";
    case ENOTEMPTY: return "ENOTEMPTY";
    default: return "EOTHER";
  }
}

// open PATH...: for each path, "open PATH ok BYTES CONTENT-PREFIX" or "open PATH errno NAME".
static int openPaths(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    int fd = open(argv[i], O_RDONLY);
    if (fd < 0) {
      printf("open %s errno %s\n", argv[i], errname(errno));
      continue;
    }
    char buf[64] = {0};
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    for (ssize_t k = 0; k < n; ++k)
      if (buf[k] == '\n' || buf[k] == ' ') buf[k] = '_';
    printf("open %s ok %zd %s\n", argv[i], n, n > 0 ? buf : "-");
    close(fd);
  }
  return 0;
}

// write PATH: try to create and write a file.
static int writePath(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    printf("write %s errno %s\n", path, errname(errno));
    return 0;
  }
  ssize_t n = write(fd, "x", 1);
  printf("write %s ok %zd\n", path, n);
  return 0;
}

// fs OP ARGS [OP ARGS]...: file system changes, one "OP PATH ok" or "OP PATH errno NAME" line
// each. OPs: write PATH DATA, append PATH DATA, mkdir PATH, rmdir PATH, unlink PATH,
// rename FROM TO, symlink TARGET PATH, link FROM TO, truncate PATH (to 0).
static int fsOps(int argc, char** argv) {
  for (int i = 0; i < argc;) {
    const char* op = argv[i];
    const int need = (!strcmp(op, "mkdir") || !strcmp(op, "rmdir") || !strcmp(op, "unlink") || !strcmp(op, "truncate")) ? 1 : 2;
    if (i + need >= argc) return 2;
    const char* a = argv[i + 1];
    const char* b = need == 2 ? argv[i + 2] : NULL;
    int rc = -1;
    if (!strcmp(op, "write") || !strcmp(op, "append")) {
      int fd = open(a, O_WRONLY | O_CREAT | (!strcmp(op, "write") ? O_TRUNC : O_APPEND), 0644);
      if (fd >= 0) {
        rc = write(fd, b, strlen(b)) == (ssize_t)strlen(b) ? 0 : -1;
        close(fd);
      }
    } else if (!strcmp(op, "mkdir")) rc = mkdir(a, 0755);
    else if (!strcmp(op, "rmdir")) rc = rmdir(a);
    else if (!strcmp(op, "unlink")) rc = unlink(a);
    else if (!strcmp(op, "rename")) rc = rename(a, b);
    else if (!strcmp(op, "symlink")) rc = symlink(a, b);
    else if (!strcmp(op, "link")) rc = link(a, b);
    else if (!strcmp(op, "truncate")) rc = truncate(a, 0);
    else return 2;
    if (rc == 0) printf("%s %s ok\n", op, need == 2 && strcmp(op, "write") && strcmp(op, "append") ? b : a);
    else printf("%s %s errno %s\n", op, need == 2 && strcmp(op, "write") && strcmp(op, "append") ? b : a, errname(errno));
    i += need + 1;
  }
  return 0;
}

static int printEnv(void) {
  int n = 0;
  for (char** e = environ; *e; ++e, ++n) printf("env %s\n", *e);
  printf("env-count %d\n", n);
  return 0;
}

// grow: memory.grow one page at a time until it fails; print how many pages there are.
static int grow(void) {
  unsigned long grown = 0;
  while (__builtin_wasm_memory_grow(0, 1) != (size_t)-1) ++grown;
  printf("grow pages=%lu grown=%lu\n", (unsigned long)__builtin_wasm_memory_size(0), grown);
  return 0;
}

static volatile int sink;
// Not a tail call: the frame stays live across the recursion.
static int recurse(int depth) {
  volatile char frame[256];
  frame[depth & 255] = (char)depth;
  int r = recurse(depth + 1) + frame[(depth * 7) & 255];
  sink = r;
  return r;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc < 2) {
    printf("usage: guest MODE ...\n");
    return 2;
  }
  const char* mode = argv[1];
  if (!strcmp(mode, "hello")) {
    printf("hello argc=%d argv0=%s\n", argc, argv[0]);
    return 0;
  }
  if (!strcmp(mode, "exit")) return argc > 2 ? atoi(argv[2]) : 0;
  if (!strcmp(mode, "open")) return openPaths(argc - 2, argv + 2);
  if (!strcmp(mode, "write")) return argc > 2 ? writePath(argv[2]) : 2;
  if (!strcmp(mode, "env")) return printEnv();
  if (!strcmp(mode, "fs")) return fsOps(argc - 2, argv + 2);
  if (!strcmp(mode, "grow")) return grow();
  if (!strcmp(mode, "recurse")) return recurse(0);
  if (!strcmp(mode, "oob")) {
    volatile uint32_t* far = (volatile uint32_t*)(uintptr_t)0xfffffff0u;
    printf("oob read %u\n", (unsigned)*far);
    return 0;
  }
  if (!strcmp(mode, "inbounds")) {
    volatile uint32_t* near = (volatile uint32_t*)malloc(64);
    near[3] = 7;
    printf("inbounds read %u\n", (unsigned)near[3]);
    return 0;
  }
  if (!strcmp(mode, "loop")) {
    for (;;) sink++;
  }
  if (!strcmp(mode, "sleep")) {
    // poll_oneoff on a clock, through nanosleep.
    struct timespec ts = {argc > 2 ? atoi(argv[2]) : 1, 0};
    printf("sleeping\n");
    nanosleep(&ts, NULL);
    printf("slept\n");
    return 0;
  }
  if (!strcmp(mode, "clock")) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    struct timespec d = {0, 20 * 1000 * 1000};
    nanosleep(&d, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    long long ns = (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
    unsigned char r[16];
    getentropy(r, sizeof(r));
    int nonzero = 0;
    for (int i = 0; i < 16; ++i) nonzero += r[i] != 0;
    printf("clock slept_ms_at_least_20=%d random_nonzero=%d realtime_after_2020=%d\n", ns >= 20000000LL, nonzero > 0,
           time(NULL) > 1577836800);
    return 0;
  }
  printf("unknown mode %s\n", mode);
  return 2;
}
