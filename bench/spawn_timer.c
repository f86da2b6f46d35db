// SPDX-License-Identifier: Apache-2.0
// corral-spawn-timer: times named command lines in interleaved rounds via fork+execve+wait4.
//
// Input (file or "-" for stdin), one command per line, fields separated by TABs:
//     name<TAB>argv0<TAB>argv1...
// Blank lines and lines starting with '#' are ignored. argv0 is resolved against PATH once,
// before any timing, so no shell and no PATH search sit in the measured path.
//
// Round r runs every command once. With --order rotate (the default) it starts at command
// (r mod N) and keeps the cyclic order, so every command leads a round equally often. With
// --order shuffle each round is a seeded random permutation, so every command also follows
// every other about equally often: that matters when one command leaves deferred kernel
// work (RCU callbacks, netns cleanup, an rcu_sync still in writer mode after a cgroup
// attach) that speeds up or slows down whatever runs next. The first --warmup rounds are
// run and discarded.
//
// Each sample is the CLOCK_MONOTONIC time from just before fork() until the launch is over:
// the timer is a child subreaper, so it reaps the launched process and then every
// descendant that was orphaned on the way (a launcher may exit while its sandbox is still
// tearing down); --launcher-only stops at the launched process. CPU and peak RSS come from
// the wait4() rusage of everything reaped: on Linux it includes whatever each reaped
// process had itself reaped, so ru_maxrss is the largest single-process peak in the tree
// and utime+stime is the CPU time of the whole tree.
//
// Output: JSON on stdout: {"rounds":R,"warmup":W,"commands":[{name,argv,ok,failed,
// wall_ms:{median,p10,p90,mean,min,max},cpu_ms:{...},maxrss_kb:{...},samples?}]}.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

enum { kMaxCommands = 64, kMaxArgs = 256 };

typedef struct {
  char* name;
  char* argv[kMaxArgs + 1];
  int argc;
  char* path;  // resolved argv0
  double* wall_ms;
  double* cpu_ms;
  double* maxrss_kb;
  int ns_fd;  // namespace to setns() into before execve, or -1
  int n;
  int failed;
  int last_status;
} Command;

static Command commands[kMaxCommands];
static int command_count;
static int tree_wait = 1;  // --launcher-only clears it

static void die(const char* what) {
  fprintf(stderr, "corral-spawn-timer: %s: %s\n", what, strerror(errno));
  exit(2);
}

static void fail(const char* msg) {
  fprintf(stderr, "corral-spawn-timer: %s\n", msg);
  exit(2);
}

static char* resolvePath(const char* arg0) {
  if (strchr(arg0, '/')) return strdup(arg0);
  const char* path = getenv("PATH");
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  char* copy = strdup(path);
  char* save = NULL;
  for (char* dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", dir, arg0);
    if (access(buf, X_OK) == 0) {
      free(copy);
      return strdup(buf);
    }
  }
  free(copy);
  return NULL;
}

static void parseCommands(FILE* in) {
  char* line = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, in)) >= 0) {
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
    if (len == 0 || line[0] == '#') continue;
    if (command_count == kMaxCommands) fail("too many commands");
    Command* c = &commands[command_count];
    char* save = NULL;
    char* dup = strdup(line);
    char* field = strtok_r(dup, "\t", &save);
    c->name = field;
    while ((field = strtok_r(NULL, "\t", &save)) != NULL) {
      if (c->argc == kMaxArgs) fail("too many arguments");
      c->argv[c->argc++] = field;
    }
    c->argv[c->argc] = NULL;
    if (c->argc == 0) fail("a command line has a name but no argv");
    c->path = resolvePath(c->argv[0]);
    if (!c->path) {
      fprintf(stderr, "corral-spawn-timer: %s: %s not found in PATH\n", c->name, c->argv[0]);
      exit(2);
    }
    command_count++;
  }
  free(line);
}

static double nowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double tvMs(struct timeval tv) { return (double)tv.tv_sec * 1e3 + (double)tv.tv_usec / 1e3; }

// Runs one command once. Returns 0 and fills the sample when the child exited 0.
static int runOnce(Command* c, int devnull, int stderr_fd, double* wall, double* cpu,
                   double* rss) {
  double start = nowMs();
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    // Invariant: only async-signal-safe calls between fork and execve.
    dup2(devnull, 0);
    dup2(devnull, 1);
    dup2(stderr_fd, 2);
    if (c->ns_fd >= 0 && setns(c->ns_fd, 0) != 0) _exit(126);
    execve(c->path, c->argv, environ);
    _exit(127);
  }
  int status = 0;
  struct rusage ru;
  pid_t got;
  do {
    got = wait4(pid, &status, 0, &ru);
  } while (got < 0 && errno == EINTR);
  if (got < 0) die("wait4");
  double cpu_ms = tvMs(ru.ru_utime) + tvMs(ru.ru_stime);
  double max_rss = (double)ru.ru_maxrss;
  if (tree_wait) {
    // We are a child subreaper: whatever the launcher left behind (bwrap's outer process
    // exits on its child's status while the sandbox's pid 1 is still tearing down) is
    // reparented to us. The launch is over when the last of them is reaped.
    for (;;) {
      struct rusage more;
      pid_t other = wait4(-1, NULL, __WALL, &more);
      if (other < 0) {
        if (errno == EINTR) continue;
        if (errno == ECHILD) break;
        die("wait4 (descendants)");
      }
      cpu_ms += tvMs(more.ru_utime) + tvMs(more.ru_stime);
      if ((double)more.ru_maxrss > max_rss) max_rss = (double)more.ru_maxrss;
    }
  }
  double end = nowMs();
  *wall = end - start;
  *cpu = cpu_ms;
  *rss = max_rss;
  c->last_status = status;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

// xorshift64*: enough to vary the order of a few commands per round.
static uint64_t nextRandom(uint64_t* state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545f4914f6cdd1dull;
}

static int cmpDouble(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

// Linear interpolation between closest ranks on sorted data (numpy's default).
static double percentile(const double* sorted, int n, double p) {
  if (n == 0) return 0;
  double rank = p * (n - 1);
  int lo = (int)rank;
  int hi = lo + 1 < n ? lo + 1 : lo;
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

static void printJsonString(const char* s) {
  putchar('"');
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') printf("\\%c", ch);
    else if (ch < 0x20) printf("\\u%04x", ch);
    else putchar(ch);
  }
  putchar('"');
}

static void printStats(const char* key, const double* values, int n, int with_samples) {
  double* sorted = malloc(sizeof(double) * (n ? n : 1));
  memcpy(sorted, values, sizeof(double) * n);
  qsort(sorted, n, sizeof(double), cmpDouble);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += sorted[i];
  printf("\"%s\":{\"median\":%.4f,\"p10\":%.4f,\"p90\":%.4f,\"mean\":%.4f,\"min\":%.4f,"
         "\"max\":%.4f",
         key, percentile(sorted, n, 0.5), percentile(sorted, n, 0.1), percentile(sorted, n, 0.9),
         n ? sum / n : 0, n ? sorted[0] : 0, n ? sorted[n - 1] : 0);
  if (with_samples) {
    printf(",\"samples\":[");
    for (int i = 0; i < n; i++) printf("%s%.4f", i ? "," : "", values[i]);
    putchar(']');
  }
  putchar('}');
  free(sorted);
}

static void usage(void) {
  fprintf(stderr,
          "usage: corral-spawn-timer [-n ROUNDS] [-w WARMUP] [--samples] [--stderr]\n"
          "                          [--max-failures N] [--setns NAME=NSFILE]...\n"
          "                          [--order rotate|shuffle] [--gap-ms MS] FILE|-\n"
          "  FILE: one command per line: name<TAB>argv0<TAB>argv1...\n"
          "  -n ROUNDS        measured rounds (default 30)\n"
          "  -w WARMUP        discarded warm-up rounds (default 1)\n"
          "  --order rotate   round r starts at command r mod N, same cyclic order (default)\n"
          "  --order shuffle  round r is a seeded random permutation: every command follows\n"
          "                   every other about equally often\n"
          "  --gap-ms MS      idle this long before each run (not timed), so deferred kernel\n"
          "                   work of the previous command does not land on the next\n"
          "  --launcher-only  stop the clock when the launched process is reaped, even if\n"
          "                   processes it started are still exiting (default: we are a\n"
          "                   child subreaper and also wait for every orphaned descendant)\n"
          "  --samples        also print every sample, in run order\n"
          "  --stderr         let children write to our stderr (default: /dev/null)\n"
          "  --max-failures N stop a command after N failed runs (default 3)\n"
          "  --setns NAME=NSFILE  the child of command NAME joins that namespace (e.g.\n"
          "                   /proc/PID/ns/mnt) before execve; costs one setns() per run\n");
  exit(2);
}

int main(int argc, char** argv) {
  int rounds = 30, warmup = 1, with_samples = 0, keep_stderr = 0, max_failures = 3;
  int shuffle = 0, gap_ms = 0;
  char* setns_args[kMaxCommands];
  int setns_count = 0;
  static const struct option opts[] = {
      {"rounds", required_argument, 0, 'n'},  {"warmup", required_argument, 0, 'w'},
      {"samples", no_argument, 0, 's'},       {"stderr", no_argument, 0, 'e'},
      {"max-failures", required_argument, 0, 'f'}, {"setns", required_argument, 0, 'S'},
      {"order", required_argument, 0, 'o'},   {"gap-ms", required_argument, 0, 'g'},
      {"launcher-only", no_argument, 0, 'L'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  int opt;
  while ((opt = getopt_long(argc, argv, "n:w:h", opts, NULL)) != -1) {
    switch (opt) {
      case 'n': rounds = atoi(optarg); break;
      case 'w': warmup = atoi(optarg); break;
      case 's': with_samples = 1; break;
      case 'e': keep_stderr = 1; break;
      case 'f': max_failures = atoi(optarg); break;
      case 'o':
        if (strcmp(optarg, "shuffle") == 0) shuffle = 1;
        else if (strcmp(optarg, "rotate") == 0) shuffle = 0;
        else usage();
        break;
      case 'g': gap_ms = atoi(optarg); break;
      case 'L': tree_wait = 0; break;
      case 'S':
        if (setns_count == kMaxCommands || !strchr(optarg, '=')) usage();
        setns_args[setns_count++] = optarg;
        break;
      default: usage();
    }
  }
  if (optind != argc - 1 || rounds < 1 || warmup < 0) usage();
  FILE* in = strcmp(argv[optind], "-") == 0 ? stdin : fopen(argv[optind], "r");
  if (!in) die(argv[optind]);
  parseCommands(in);
  if (in != stdin) fclose(in);
  if (command_count == 0) fail("no commands");
  for (int i = 0; i < command_count; i++) commands[i].ns_fd = -1;
  for (int s = 0; s < setns_count; s++) {
    char* eq = strchr(setns_args[s], '=');
    *eq = '\0';
    int found = 0;
    for (int i = 0; i < command_count; i++) {
      if (strcmp(commands[i].name, setns_args[s]) != 0) continue;
      commands[i].ns_fd = open(eq + 1, O_RDONLY | O_CLOEXEC);
      if (commands[i].ns_fd < 0) die(eq + 1);
      found = 1;
    }
    if (!found) {
      fprintf(stderr, "corral-spawn-timer: --setns names no command: %s\n", setns_args[s]);
      exit(2);
    }
  }

  if (tree_wait && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) die("PR_SET_CHILD_SUBREAPER");
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) die("open /dev/null");
  int stderr_fd = keep_stderr ? 2 : devnull;
  for (int i = 0; i < command_count; i++) {
    commands[i].wall_ms = calloc(rounds, sizeof(double));
    commands[i].cpu_ms = calloc(rounds, sizeof(double));
    commands[i].maxrss_kb = calloc(rounds, sizeof(double));
  }
  // Nothing else runs in this process: stdout is buffered until the end so printing does
  // not interleave with the measured children.
  int order[kMaxCommands];
  uint64_t rng = 0x9e3779b97f4a7c15ull;  // fixed seed: runs are reproducible
  for (int r = 0; r < warmup + rounds; r++) {
    for (int k = 0; k < command_count; k++) order[k] = (r + k) % command_count;
    if (shuffle) {
      for (int k = command_count - 1; k > 0; k--) {
        int j = (int)(nextRandom(&rng) % (uint64_t)(k + 1));
        int t = order[k];
        order[k] = order[j];
        order[j] = t;
      }
    }
    for (int k = 0; k < command_count; k++) {
      Command* c = &commands[order[k]];
      if (c->failed >= max_failures) continue;
      if (gap_ms > 0) {
        struct timespec ts = {gap_ms / 1000, (long)(gap_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
      }
      double wall, cpu, rss;
      if (runOnce(c, devnull, stderr_fd, &wall, &cpu, &rss) != 0) {
        c->failed++;
        continue;
      }
      if (r < warmup) continue;
      c->wall_ms[c->n] = wall;
      c->cpu_ms[c->n] = cpu;
      c->maxrss_kb[c->n] = rss;
      c->n++;
    }
  }

  printf("{\"rounds\":%d,\"warmup\":%d,\"order\":\"%s\",\"gap_ms\":%d,\"tree_wait\":%s,"
         "\"commands\":[",
         rounds, warmup, shuffle ? "shuffle" : "rotate", gap_ms, tree_wait ? "true" : "false");
  for (int i = 0; i < command_count; i++) {
    Command* c = &commands[i];
    printf("%s{\"name\":", i ? "," : "");
    printJsonString(c->name);
    printf(",\"argv\":[");
    for (int a = 0; a < c->argc; a++) {
      if (a) putchar(',');
      printJsonString(c->argv[a]);
    }
    printf("],\"ok\":%d,\"failed\":%d,\"last_status\":%d,", c->n, c->failed, c->last_status);
    printStats("wall_ms", c->wall_ms, c->n, with_samples);
    putchar(',');
    printStats("cpu_ms", c->cpu_ms, c->n, with_samples);
    putchar(',');
    printStats("maxrss_kb", c->maxrss_kb, c->n, with_samples);
    putchar('}');
  }
  printf("]}\n");
  return 0;
}
