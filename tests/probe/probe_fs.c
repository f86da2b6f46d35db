// SPDX-License-Identifier: Apache-2.0
// corral-probe file-system ops: stat, open for write, create, list, fds, fill a file system.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "probe.h"

static const char *type_name(mode_t m) {
  switch (m & S_IFMT) {
    case S_IFREG: return "reg";
    case S_IFDIR: return "dir";
    case S_IFLNK: return "lnk";
    case S_IFCHR: return "chr";
    case S_IFBLK: return "blk";
    case S_IFIFO: return "fifo";
    case S_IFSOCK: return "sock";
    default: return "unknown";
  }
}

static int report_stat(const struct stat *st) {
  return probe_ok("type=%s mode=%o uid=%u gid=%u size=%lld nlink=%lu rdev=%u:%u ino=%lu",
                  type_name(st->st_mode), (unsigned)(st->st_mode & 07777), (unsigned)st->st_uid,
                  (unsigned)st->st_gid, (long long)st->st_size, (unsigned long)st->st_nlink,
                  major(st->st_rdev), minor(st->st_rdev), (unsigned long)st->st_ino);
}

static int op_stat(int argc, char **argv) {
  if (argc != 2) return probe_usage("stat PATH");
  struct stat st;
  int rc = strcmp(argv[0], "lstat") == 0 ? lstat(argv[1], &st) : stat(argv[1], &st);
  return rc == 0 ? report_stat(&st) : probe_errno(errno, NULL);
}

static int op_statfs(int argc, char **argv) {
  if (argc != 2) return probe_usage("statfs PATH");
  struct statfs fs;
  struct statvfs vfs;
  if (statfs(argv[1], &fs) != 0 || statvfs(argv[1], &vfs) != 0) return probe_errno(errno, NULL);
  return probe_ok("type=0x%lx bytes=%llu ro=%d nosuid=%d nodev=%d noexec=%d",
                  (unsigned long)fs.f_type, (unsigned long long)fs.f_blocks * (unsigned long long)fs.f_bsize,
                  !!(vfs.f_flag & ST_RDONLY), !!(vfs.f_flag & ST_NOSUID), !!(vfs.f_flag & ST_NODEV),
                  !!(vfs.f_flag & ST_NOEXEC));
}

static int op_read(int argc, char **argv) {
  if (argc < 2 || argc > 3) return probe_usage("read PATH [MAX]");
  long long max = argc == 3 ? probe_number(argv[2]) : 16384;
  if (max <= 0 || max > 16384) return probe_usage("read: MAX must be 1..16384");
  static char buf[16385], esc[65536];
  long n = probe_slurp(argv[1], buf, (size_t)max + 1);
  if (n < 0) return probe_errno((int)-n, NULL);
  esc[0] = '\0';
  probe_escape(esc, sizeof esc, buf, (size_t)n);
  return probe_ok("bytes=%ld data=%s", n, esc);
}

// Opening for write is the attack; nothing is ever written, so the host control is harmless.
static int op_open_write(int argc, char **argv) {
  if (argc != 2) return probe_usage("%s PATH", argv[0]);
  int flags = strcmp(argv[0], "open-rdwr") == 0 ? O_RDWR : O_WRONLY;
  int fd = open(argv[1], flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return probe_errno(errno, NULL);
  close(fd);
  return probe_ok(NULL);
}

// runc CVE-2019-5736 shape: hold an O_PATH handle, then reopen it for write via /proc/self/fd.
static int op_reopen_wronly(int argc, char **argv) {
  if (argc != 2) return probe_usage("reopen-wronly PATH");
  int pfd = open(argv[1], O_PATH | O_CLOEXEC);
  if (pfd < 0) return probe_errno(errno, "stage=opath");
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", pfd);
  int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
  int err = errno;
  close(pfd);
  if (fd < 0) return probe_errno(err, "stage=reopen");
  close(fd);
  return probe_ok(NULL);
}

static int op_create(int argc, char **argv) {
  if (argc < 2 || argc > 3) return probe_usage("%s PATH [DATA]", argv[0]);
  int excl = strcmp(argv[0], "create") == 0;
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | (excl ? O_EXCL : O_TRUNC), 0644);
  if (fd < 0) return probe_errno(errno, NULL);
  const char *data = argc == 3 ? argv[2] : "corral-probe\n";
  ssize_t w = write(fd, data, strlen(data));
  int err = errno;
  close(fd);
  return w < 0 ? probe_errno(err, "stage=write") : probe_ok("bytes=%zd", w);
}

static int op_mkdir(int argc, char **argv) {
  if (argc != 2) return probe_usage("mkdir PATH");
  return mkdir(argv[1], 0755) == 0 ? probe_ok(NULL) : probe_errno(errno, NULL);
}

static int op_mknod(int argc, char **argv) {
  if (argc != 2) return probe_usage("mknod PATH");
  // A /dev/null twin: a device node the sandbox could not otherwise reach.
  return mknod(argv[1], S_IFCHR | 0666, makedev(1, 3)) == 0 ? probe_ok(NULL) : probe_errno(errno, NULL);
}

static int op_readlink(int argc, char **argv) {
  if (argc != 2) return probe_usage("readlink PATH");
  char target[4096], esc[16384] = "";
  ssize_t n = readlink(argv[1], target, sizeof target - 1);
  if (n < 0) return probe_errno(errno, NULL);
  probe_escape(esc, sizeof esc, target, (size_t)n);
  return probe_ok("target=%s", esc);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

// Lists a directory stream as "entries=a,b,c" (sorted, escaped); closes it.
static int list_dir(DIR *d) {
  static char names[4096][256];
  static char *sorted[4096];
  static char out[65536];
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL && n < 4096;) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(names[n], sizeof names[n], "%s", e->d_name);
    sorted[n] = names[n];
    ++n;
  }
  closedir(d);
  qsort(sorted, n, sizeof sorted[0], cmp_str);
  out[0] = '\0';
  for (size_t i = 0; i < n; ++i) {
    if (i) strcat(out, ",");
    probe_escape(out, sizeof out, sorted[i], strlen(sorted[i]));
  }
  return probe_ok("count=%zu entries=%s", n, out);
}

static int op_listdir(int argc, char **argv) {
  if (argc != 2) return probe_usage("listdir PATH");
  DIR *d = opendir(argv[1]);
  return d ? list_dir(d) : probe_errno(errno, NULL);
}

// runc CVE-2024-21626 shape: make a leaked or /proc path the cwd, then look around.
static int op_chdir_list(int argc, char **argv) {
  if (argc != 2) return probe_usage("chdir-list PATH");
  if (chdir(argv[1]) != 0) return probe_errno(errno, "stage=chdir");
  DIR *d = opendir(".");
  return d ? list_dir(d) : probe_errno(errno, "stage=opendir");
}

static int op_open_at_fd(int argc, char **argv) {
  if (argc != 3) return probe_usage("open-at-fd FD REL");
  long long fd = probe_number(argv[1]);
  if (fd < 0) return probe_usage("open-at-fd: bad FD");
  int dfd = openat((int)fd, argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return probe_errno(errno, NULL);
  DIR *d = fdopendir(dfd);
  return d ? list_dir(d) : probe_errno(errno, "stage=fdopendir");
}

static int op_mountinfo(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("mountinfo");
  static char buf[262144], out[65536];
  long n = probe_slurp("/proc/self/mountinfo", buf, sizeof buf);
  if (n < 0) return probe_errno((int)-n, NULL);
  out[0] = '\0';
  size_t count = 0;
  for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    // Field 5 is the mount point (already octal-escaped by the kernel, so no spaces).
    char *f = line;
    for (int i = 0; i < 4 && f; ++i) f = strchr(f, ' ') ? strchr(f, ' ') + 1 : NULL;
    if (!f) continue;
    size_t len = strcspn(f, " ");
    if (count++) strcat(out, ",");
    probe_escape(out, sizeof out, f, len);
  }
  return probe_ok("count=%zu mounts=%s", count, out);
}

// Every open fd, found with fcntl so the probe opens none itself (no /proc dir fd in the list).
static int op_fd_list(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("fd-list");
  struct rlimit rl;
  long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (1 << 20) ? (long)rl.rlim_cur : (1 << 20);
  char out[8192] = "";
  size_t count = 0;
  for (long fd = 0; fd < max; ++fd) {
    if (fcntl((int)fd, F_GETFD) < 0) continue;
    size_t len = strlen(out);
    if (len + 16 < sizeof out) snprintf(out + len, sizeof out - len, "%s%ld", count ? "," : "", fd);
    ++count;
  }
  return probe_ok("count=%zu fds=%s", count, out);
}

// Which /proc/PID/fd/N (N < 256) lead to a directory: a leaked host directory is an escape.
static int op_fd_escape(int argc, char **argv) {
  if (argc != 2) return probe_usage("fd-escape PID|self");
  char out[2048] = "", path[64];
  size_t found = 0;
  for (int n = 0; n < 256; ++n) {
    snprintf(path, sizeof path, "/proc/%s/fd/%d", argv[1], n);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    size_t len = strlen(out);
    snprintf(out + len, sizeof out - len, "%s%d", found++ ? "," : "", n);
  }
  return found ? probe_ok("dirs=%s", out) : probe_refused("dirs=none");
}

// Writes BYTES in 64 KiB chunks: reports how far it got and why it stopped.
static int op_write_big(int argc, char **argv) {
  if (argc < 3 || argc > 4) return probe_usage("write-big PATH BYTES [ignore-xfsz]");
  long long want = probe_number(argv[2]);
  if (want < 0) return probe_usage("write-big: bad BYTES");
  if (argc == 4) {
    if (strcmp(argv[3], "ignore-xfsz") != 0) return probe_usage("write-big: bad flag");
    signal(SIGXFSZ, SIG_IGN);
  }
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return probe_errno(errno, "bytes=0 stage=open");
  static char chunk[65536];
  memset(chunk, 'x', sizeof chunk);
  long long done = 0;
  while (done < want) {
    size_t len = want - done < (long long)sizeof chunk ? (size_t)(want - done) : sizeof chunk;
    ssize_t w = write(fd, chunk, len);
    if (w < 0) {
      int err = errno;
      close(fd);
      return probe_errno(err, "bytes=%lld", done);
    }
    done += w;
  }
  close(fd);
  return probe_ok("bytes=%lld", done);
}

static int op_open_many(int argc, char **argv) {
  if (argc != 2) return probe_usage("open-many N");
  long long want = probe_number(argv[1]);
  if (want < 0) return probe_usage("open-many: bad N");
  long long count = 0;
  for (; count < want; ++count) {
    if (open("/dev/null", O_RDONLY | O_CLOEXEC) < 0) return probe_errno(errno, "count=%lld", count);
  }
  return probe_ok("count=%lld", count);
}

const struct probe_op probe_fs_ops[] = {
    {"stat", "PATH", op_stat},
    {"lstat", "PATH", op_stat},
    {"statfs", "PATH", op_statfs},
    {"read", "PATH [MAX]", op_read},
    {"open-wronly", "PATH (opens, writes nothing)", op_open_write},
    {"open-rdwr", "PATH (opens, writes nothing)", op_open_write},
    {"reopen-wronly", "PATH (O_PATH, then /proc/self/fd/N for write)", op_reopen_wronly},
    {"create", "PATH [DATA] (O_EXCL)", op_create},
    {"write", "PATH [DATA] (O_TRUNC)", op_create},
    {"mkdir", "PATH", op_mkdir},
    {"mknod", "PATH (char 1:3)", op_mknod},
    {"readlink", "PATH", op_readlink},
    {"listdir", "PATH", op_listdir},
    {"chdir-list", "PATH", op_chdir_list},
    {"open-at-fd", "FD REL", op_open_at_fd},
    {"mountinfo", "", op_mountinfo},
    {"fd-list", "", op_fd_list},
    {"fd-escape", "PID|self", op_fd_escape},
    {"write-big", "PATH BYTES [ignore-xfsz]", op_write_big},
    {"open-many", "N", op_open_many},
    {NULL, NULL, NULL},
};
