// SPDX-License-Identifier: Apache-2.0
// corral-probe inspection ops: environment, rlimits, secrets in /proc, ptrace, SysV IPC, landlock.
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

extern char **environ;

static int op_env(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("env");
  static char out[65536];
  out[0] = '\0';
  int count = 0;
  for (char **e = environ; *e; ++e, ++count) {
    if (count) strcat(out, " ");
    probe_escape(out, sizeof out, *e, strlen(*e));
  }
  return probe_ok("count=%d %s", count, out);
}

static void fmt_limit(char *out, size_t cap, rlim_t v) {
  if (v == RLIM_INFINITY) snprintf(out, cap, "inf");
  else snprintf(out, cap, "%llu", (unsigned long long)v);
}

static int op_rlimits(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("rlimits");
  static const struct {
    const char *name;
    int res;
  } kLimits[] = {{"nofile", RLIMIT_NOFILE}, {"nproc", RLIMIT_NPROC}, {"fsize", RLIMIT_FSIZE},
                 {"cpu", RLIMIT_CPU}, {"as", RLIMIT_AS}, {"core", RLIMIT_CORE}};
  char out[512] = "";
  for (size_t i = 0; i < sizeof kLimits / sizeof kLimits[0]; ++i) {
    struct rlimit rl;
    char soft[32] = "?", hard[32] = "?";
    if (getrlimit(kLimits[i].res, &rl) == 0) {
      fmt_limit(soft, sizeof soft, rl.rlim_cur);
      fmt_limit(hard, sizeof hard, rl.rlim_max);
    }
    size_t len = strlen(out);
    snprintf(out + len, sizeof out - len, "%s%s=%s/%s", len ? " " : "", kLimits[i].name, soft, hard);
  }
  return probe_ok("%s", out);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Searches every /proc/*/environ and /proc/*/cmdline for NEEDLE, given hex-encoded so the
// probe's own argv never contains it. "ok found=..." means a secret leaked.
static int op_find_in_proc(int argc, char **argv) {
  if (argc != 2 || strlen(argv[1]) % 2 || strlen(argv[1]) > 512) return probe_usage("find-in-proc HEX");
  char needle[257];
  size_t nlen = strlen(argv[1]) / 2;
  for (size_t i = 0; i < nlen; ++i) {
    int hi = hexval(argv[1][2 * i]), lo = hexval(argv[1][2 * i + 1]);
    if (hi < 0 || lo < 0) return probe_usage("find-in-proc: bad hex");
    needle[i] = (char)(hi * 16 + lo);
  }
  DIR *d = opendir("/proc");
  if (!d) return probe_errno(errno, NULL);
  static char buf[1 << 20];
  char found[2048] = "";
  int readable = 0, unreadable = 0, hits = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    static const char *const kFiles[] = {"environ", "cmdline"};
    for (size_t f = 0; f < 2; ++f) {
      char path[300];
      snprintf(path, sizeof path, "/proc/%s/%s", e->d_name, kFiles[f]);
      long n = probe_slurp(path, buf, sizeof buf);
      if (n < 0) {
        ++unreadable;
        continue;
      }
      ++readable;
      if (!memmem(buf, (size_t)n, needle, nlen)) continue;
      size_t len = strlen(found);
      snprintf(found + len, sizeof found - len, "%s%s/%s", hits++ ? "," : "", e->d_name, kFiles[f]);
    }
  }
  closedir(d);
  if (hits) return probe_ok("found=%s readable=%d unreadable=%d", found, readable, unreadable);
  return probe_refused("found=none readable=%d unreadable=%d", readable, unreadable);
}

static int op_ptrace_attach(int argc, char **argv) {
  long long pid = argc == 2 ? probe_number(argv[1]) : -1;
  if (pid <= 0) return probe_usage("ptrace-attach PID");
  if (ptrace(PTRACE_ATTACH, (pid_t)pid, 0, 0) != 0) return probe_errno(errno, NULL);
  waitpid((pid_t)pid, NULL, __WALL);
  ptrace(PTRACE_DETACH, (pid_t)pid, 0, 0);
  return probe_ok(NULL);
}

// Steals descriptors from PID with pidfd_getfd (fds 0-255): a host fd held by init would be
// an escape. "ok stolen=N,..." means the attack got at least one.
static int op_pidfd_getfd(int argc, char **argv) {
  long long pid = argc == 2 ? probe_number(argv[1]) : -1;
  if (pid <= 0) return probe_usage("pidfd-getfd PID");
  int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
  if (pidfd < 0) return probe_errno(errno, "stage=pidfd_open");
  char out[2048] = "";
  int stolen = 0, last_err = 0;
  for (int fd = 0; fd < 256; ++fd) {
    int got = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
    if (got < 0) {
      if (errno != EBADF) last_err = errno;
      continue;
    }
    size_t len = strlen(out);
    snprintf(out + len, sizeof out - len, "%s%d", stolen++ ? "," : "", fd);
    close(got);
  }
  close(pidfd);
  if (stolen) return probe_ok("stolen=%s", out);
  return last_err ? probe_errno(last_err, "stolen=none") : probe_refused("stolen=none");
}

// Control for init.not-inspectable: an ordinary (dumpable, same-uid) child's environ and fd
// table are readable, so a refusal on pid 1 comes from how init was set up.
static int op_inspect_sibling(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("inspect-sibling");
  pid_t child = fork();
  if (child < 0) return probe_errno(errno, "stage=fork");
  if (child == 0) {
    for (;;) pause();
  }
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/%d/environ", child);
  long n = probe_slurp(path, buf, sizeof buf);
  snprintf(path, sizeof path, "/proc/%d/fd", child);
  DIR *d = opendir(path);
  int dir_err = d ? 0 : errno;
  if (d) closedir(d);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  if (n < 0) return probe_errno((int)-n, "stage=environ");
  if (dir_err) return probe_errno(dir_err, "stage=fd");
  return probe_ok("environ_bytes=%ld", n);
}

// Looks up a SysV message queue by key: visible only in the same IPC namespace.
static int op_ipc_get(int argc, char **argv) {
  long long key = argc == 2 ? probe_number(argv[1]) : -1;
  if (key <= 0) return probe_usage("ipc-get KEY");
  int id = msgget((key_t)key, 0);
  return id >= 0 ? probe_ok("id=%d", id) : probe_errno(errno, NULL);
}

static int op_landlock_abi(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("landlock-abi");
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1UL /* LANDLOCK_CREATE_RULESET_VERSION */);
  return abi >= 0 ? probe_ok("abi=%ld", abi) : probe_errno(errno, NULL);
}

const struct probe_op probe_info_ops[] = {
    {"env", "", op_env},
    {"rlimits", "", op_rlimits},
    {"find-in-proc", "HEX (search /proc/*/environ and cmdline)", op_find_in_proc},
    {"ptrace-attach", "PID", op_ptrace_attach},
    {"inspect-sibling", "", op_inspect_sibling},
    {"pidfd-getfd", "PID (steal fds 0-255 with pidfd_getfd)", op_pidfd_getfd},
    {"ipc-get", "KEY", op_ipc_get},
    {"landlock-abi", "", op_landlock_abi},
    {NULL, NULL, NULL},
};
