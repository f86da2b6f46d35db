// SPDX-License-Identifier: Apache-2.0
// corral-probe process ops: fork bombs, balloons, CPU burn, daemonised trees and orphan zombies.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

static long long now_ms(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// Forks until N children exist or fork fails; every child blocks on a pipe and exits when
// the parent closes it (or dies), so the bomb never outlives the probe.
static int op_fork_bomb(int argc, char **argv) {
  long long want = argc == 2 ? probe_number(argv[1]) : -1;
  if (want < 0) return probe_usage("fork-bomb N");
  int gate[2];
  if (pipe2(gate, O_CLOEXEC) != 0) return probe_errno(errno, "stage=pipe");
  long long count = 0;
  int err = 0;
  for (; count < want; ++count) {
    pid_t pid = fork();
    if (pid < 0) {
      err = errno;
      break;
    }
    if (pid == 0) {
      char c;
      close(gate[1]);
      while (read(gate[0], &c, 1) < 0 && errno == EINTR) {
      }
      _exit(0);
    }
  }
  close(gate[1]);
  while (wait(NULL) > 0 || errno == EINTR) {
  }
  return err ? probe_errno(err, "count=%lld", count) : probe_ok("count=%lld", count);
}

// Touches every page of BYTES of anonymous memory: a balloon only a memory limit stops.
static int op_alloc(int argc, char **argv) {
  long long bytes = argc == 2 ? probe_number(argv[1]) : -1;
  if (bytes <= 0) return probe_usage("alloc BYTES");
  char *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return probe_errno(errno, "stage=mmap");
  for (long long off = 0; off < bytes; off += 4096) p[off] = (char)off;
  return probe_ok("bytes=%lld", bytes);
}

// Burns CPU: forever, or until MS of this process's CPU time are used.
static int op_spin(int argc, char **argv) {
  long long limit = argc == 2 ? probe_number(argv[1]) : -1;
  if (argc > 2 || (argc == 2 && limit < 0)) return probe_usage("spin [MS]");
  volatile unsigned long sink = 0;
  for (;;) {
    for (int i = 0; i < 1000000; ++i) sink += (unsigned long)i;
    if (limit >= 0 && now_ms(CLOCK_PROCESS_CPUTIME_ID) >= limit) break;
  }
  return probe_ok("cpu_ms=%lld", now_ms(CLOCK_PROCESS_CPUTIME_ID));
}

static void ignore_polite_signals(void) {
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
}

static void detach_stdio(void) {
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    if (null > 2) close(null);
  }
}

// A tree that tries hard to survive: the daemon leaves the session (setsid), double-forks
// so the top cannot wait for it, ignores SIGTERM/SIGHUP and drops its stdio. MARKER stays in
// every member's argv so the host can find survivors. Prints "ok ready pids=..." once built.
static int build_tree(int argc, char **argv, int top_stays) {
  if (argc != 2) return probe_usage("%s MARKER", argv[0]);
  ignore_polite_signals();
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return probe_errno(errno, "stage=pipe");
  pid_t first = fork();
  if (first < 0) return probe_errno(errno, "stage=fork");
  if (first == 0) {
    setsid();
    pid_t daemon_pid = fork();
    if (daemon_pid != 0) _exit(daemon_pid < 0);
    pid_t worker = fork();  // the daemon's own child, in the daemon's new session
    if (worker == 0) {
      close(report[1]);
      detach_stdio();
      for (;;) pause();
    }
    int pids[2] = {getpid(), worker};
    if (write(report[1], pids, sizeof pids) < 0) _exit(1);
    close(report[1]);
    detach_stdio();
    for (;;) pause();
  }
  close(report[1]);
  int pids[2] = {0, 0};
  ssize_t got = read(report[0], pids, sizeof pids);
  waitpid(first, NULL, 0);
  if (got != (ssize_t)sizeof pids || pids[1] <= 0) return probe_refused("stage=tree");
  int rc = probe_ok("ready pids=%d,%d,%d", getpid(), pids[0], pids[1]);
  if (!top_stays) return rc;
  for (;;) pause();
}

static int op_sleep_forever_tree(int argc, char **argv) { return build_tree(argc, argv, 1); }
static int op_daemonize(int argc, char **argv) { return build_tree(argc, argv, 0); }

// Prints "ok ready" and waits for stdin to close: a process the host can inspect at leisure.
static int op_await(int argc, char **argv) {
  if (argc != 2) return probe_usage("%s MARKER", argv[0]);
  probe_ok("ready pid=%d", getpid());
  char buf[256];
  for (ssize_t r; (r = read(0, buf, sizeof buf)) != 0;)
    if (r < 0 && errno != EINTR) break;
  return kProbeDid;
}

// Comma list of pids in state Z (excluding none); returns the count.
static int scan_zombies(char *out, size_t cap) {
  DIR *d = opendir("/proc");
  if (!d) return -1;
  int count = 0;
  out[0] = '\0';
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    char path[300], stat[512];
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    if (probe_slurp(path, stat, sizeof stat) <= 0) continue;
    const char *close_paren = strrchr(stat, ')');
    if (!close_paren || close_paren[1] != ' ' || close_paren[2] != 'Z') continue;
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "%s%s", count++ ? "," : "", e->d_name);
  }
  closedir(d);
  return count;
}

// An orphan that exits must be reaped by the sandbox's init. The child forks a grandchild,
// lets it die (without reaping), then exits: the zombie grandchild is reparented. "noreap"
// makes the probe a subreaper that never reaps: the control that shows zombies are seen.
static int op_orphan_zombie(int argc, char **argv) {
  int noreap = argc == 2 && strcmp(argv[1], "noreap") == 0;
  if (argc > 2 || (argc == 2 && !noreap)) return probe_usage("orphan-zombie [noreap]");
  if (noreap && prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) return probe_errno(errno, "stage=subreaper");
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return probe_errno(errno, "stage=pipe");
  pid_t child = fork();
  if (child < 0) return probe_errno(errno, "stage=fork");
  if (child == 0) {
    pid_t orphan = fork();
    if (orphan == 0) _exit(0);
    siginfo_t info;
    waitid(P_PID, (id_t)orphan, &info, WEXITED | WNOWAIT);  // dead, still a zombie
    if (write(report[1], &orphan, sizeof orphan) < 0) _exit(1);
    _exit(0);
  }
  close(report[1]);
  pid_t orphan = 0;
  if (read(report[0], &orphan, sizeof orphan) != (ssize_t)sizeof orphan) return probe_refused("stage=report");
  waitpid(child, NULL, 0);
  long long start = now_ms(CLOCK_MONOTONIC);
  long budget = noreap ? 100 : 2000;
  char path[64], stat[512];
  snprintf(path, sizeof path, "/proc/%d/stat", orphan);
  while (probe_slurp(path, stat, sizeof stat) > 0 && now_ms(CLOCK_MONOTONIC) - start < budget) sleep_ms(2);
  long long waited = now_ms(CLOCK_MONOTONIC) - start;
  char zombies[1024];
  int count = scan_zombies(zombies, sizeof zombies);
  if (count < 0) return probe_errno(errno, "stage=scan");
  if (count > 0) return probe_refused("zombies=%s orphan=%d waited_ms=%lld", zombies, orphan, waited);
  return probe_ok("reaped orphan=%d waited_ms=%lld", orphan, waited);
}

static int op_proc_pids(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("proc-pids");
  DIR *d = opendir("/proc");
  if (!d) return probe_errno(errno, NULL);
  static char out[65536];
  int count = 0;
  out[0] = '\0';
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    size_t len = strlen(out);
    if (len + 16 < sizeof out) snprintf(out + len, sizeof out - len, "%s%s", count ? "," : "", e->d_name);
    ++count;
  }
  closedir(d);
  return probe_ok("count=%d pids=%s", count, out);
}

static int op_exit(int argc, char **argv) {
  long long code = argc == 2 ? probe_number(argv[1]) : -1;
  if (code < 0 || code > 255) return probe_usage("exit N");
  return (int)code;
}

static int op_kill_self(int argc, char **argv) {
  long long sig = argc == 2 ? probe_number(argv[1]) : -1;
  if (sig <= 0 || sig > 64) return probe_usage("kill-self SIGNO");
  signal((int)sig, SIG_DFL);
  raise((int)sig);
  return probe_refused("survived");
}

static int op_sleep(int argc, char **argv) {
  long long ms = argc == 2 ? probe_number(argv[1]) : -1;
  if (ms < 0) return probe_usage("sleep MS");
  sleep_ms((long)ms);
  return probe_ok(NULL);
}

// N processes that each SIGCONT all the others for ever (pids in shared memory): an attempt
// to escape a job-control stop sent one process at a time. Prints "ready" once all run;
// the top process waits.
static int op_cont_storm(int argc, char **argv) {
  long long n = argc == 2 ? probe_number(argv[1]) : -1;
  if (n < 2 || n > 64) return probe_usage("cont-storm N (2..64)");
  volatile pid_t *pids = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (pids == MAP_FAILED) return probe_errno(errno, NULL);
  for (int i = 0; i < n; ++i) {
    pid_t pid = fork();
    if (pid < 0) return probe_errno(errno, NULL);
    if (pid == 0)
      for (;;)
        for (int j = 0; j < n; ++j)
          if (j != i && pids[j] > 0) kill(pids[j], SIGCONT);
    pids[i] = pid;
  }
  printf("ready\n");
  fflush(stdout);
  for (;;) pause();
}

const struct probe_op probe_proc_ops[] = {
    {"fork-bomb", "N", op_fork_bomb},
    {"alloc", "BYTES (touch every page)", op_alloc},
    {"spin", "[CPU_MS] (burn CPU, forever by default)", op_spin},
    {"sleep-forever-tree", "MARKER (setsid+double-fork daemons ignoring TERM/HUP; top stays)", op_sleep_forever_tree},
    {"daemonize", "MARKER (the same tree; top exits after 'ready')", op_daemonize},
    {"await", "MARKER (print ready, wait for stdin EOF)", op_await},
    {"orphan-zombie", "[noreap]", op_orphan_zombie},
    {"proc-pids", "", op_proc_pids},
    {"exit", "N", op_exit},
    {"kill-self", "SIGNO", op_kill_self},
    {"sleep", "MS", op_sleep},
    {"cont-storm", "N (N processes SIGCONT each other for ever; prints ready)", op_cont_storm},
    {NULL, NULL, NULL},
};
