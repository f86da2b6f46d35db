// SPDX-License-Identifier: Apache-2.0
// corral-bench-bare: a control for the launch benchmark, not a sandbox.
//
// It does what the bench's bubblewrap line does and nothing else, in the plainest order, so
// the table shows what bwrap's namespaces and mounts cost on this host without bwrap's own
// overhead and without anything corral adds (seccomp, Landlock, the generated /etc, /proc
// masks, namespace caps, limits, a supervising init, a report). The issue that set the
// launch goal measured such a launcher at 0.52x bwrap on its machine; this row says what the
// same thing reads here, in the same interleaved rounds.
//
//     corral-bench-bare [--no-net] WORKSPACE CMD [ARGS...]
//
// One clone3 with new user, mount, PID, IPC, UTS, cgroup and (unless --no-net) network
// namespaces; the parent writes the id maps (the caller's own uid and gid, as unshare
// --map-user does) and releases the child; the child mounts a tmpfs root over /tmp (bwrap's
// base directory), binds /usr read-only, makes the /bin, /lib* and /sbin links as the host
// has them, /proc, a /dev tmpfs with bwrap's six device nodes, devpts and /dev/shm, a tmpfs
// /tmp and the workspace at /workspace, then pivot_root(".", "."), detaches the old root,
// calls setsid, forks CMD as its pid 2 and reaps until nothing is left. Static-pie, like
// corral's launcher, so both start the same way.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char* what) {
  fprintf(stderr, "corral-bench-bare: %s: %s\n", what, strerror(errno));
  _exit(125);
}

static void writeFile(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) die(path);
  size_t n = strlen(text);
  if (write(fd, text, n) != (ssize_t)n) die(path);
  close(fd);
}

static void mountOrDie(const char* src, const char* dst, const char* type, unsigned long flags,
                       const char* data) {
  if (mount(src, dst, type, flags, data) != 0) die(dst);
}

static void bindNode(const char* name) {
  char src[64], dst[64];
  snprintf(src, sizeof src, "/dev/%s", name);
  snprintf(dst, sizeof dst, "dev/%s", name);
  int fd = open(dst, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
  if (fd < 0) die(dst);
  close(fd);
  mountOrDie(src, dst, NULL, MS_BIND, NULL);
}

// The host's top-level links (/bin -> usr/bin on a merged-/usr system) recreated as such.
static void linkTopLevel(void) {
  static const char* const names[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    char host[32], target[256];
    snprintf(host, sizeof host, "/%s", names[i]);
    ssize_t n = readlink(host, target, sizeof target - 1);
    if (n <= 0) continue;  // absent, or a real directory: bwrap's line only makes links
    target[n] = '\0';
    if (symlink(target, names[i]) != 0) die(names[i]);
  }
}

static int child(const char* workspace, char** cmd, int go_fd) {
  char c;
  if (read(go_fd, &c, 1) != 1) _exit(125);  // the parent died or failed before the maps
  int ws_fd = open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (ws_fd < 0) die(workspace);
  mountOrDie(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
  mountOrDie("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
  if (chdir("/tmp") != 0) die("/tmp");
  if (mkdir("usr", 0755) != 0) die("usr");
  mountOrDie("/usr", "usr", NULL, MS_BIND | MS_REC, NULL);
  mountOrDie(NULL, "usr", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL);
  linkTopLevel();
  if (mkdir("proc", 0755) != 0) die("proc");
  mountOrDie("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
  if (mkdir("dev", 0755) != 0) die("dev");
  mountOrDie("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
  static const char* const nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
  for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; ++i) bindNode(nodes[i]);
  if (mkdir("dev/shm", 01777) != 0 || mkdir("dev/pts", 0755) != 0) die("dev/shm, dev/pts");
  mountOrDie("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620");
  if (symlink("pts/ptmx", "dev/ptmx") != 0) die("dev/ptmx");
  if (mkdir("tmp", 01777) != 0) die("tmp");
  mountOrDie("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
  if (mkdir("workspace", 0755) != 0) die("workspace");
  // The workspace was opened before the tmpfs covered /tmp (the bench's lives there).
  char src[64];
  snprintf(src, sizeof src, "/proc/self/fd/%d", ws_fd);
  mountOrDie(src, "workspace", NULL, MS_BIND | MS_REC, NULL);
  close(ws_fd);
  // pivot_root(".", ".") stacks the old root over the new one; detaching it leaves no path
  // back to the host's tree.
  if (syscall(SYS_pivot_root, ".", ".") != 0) die("pivot_root");
  if (umount2(".", MNT_DETACH) != 0) die("detach the old root");
  if (chdir("/workspace") != 0) die("/workspace");
  if (setsid() < 0) die("setsid");
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    execv(cmd[0], cmd);
    _exit(127);
  }
  int status = 0, cmd_status = 0;
  for (;;) {
    pid_t r = wait(&status);
    if (r < 0 && errno == ECHILD) break;
    if (r == pid) cmd_status = status;
  }
  _exit(WIFEXITED(cmd_status) ? WEXITSTATUS(cmd_status) : 128 + WTERMSIG(cmd_status));
}

int main(int argc, char** argv) {
  int arg = 1, net = 1;
  if (arg < argc && strcmp(argv[arg], "--no-net") == 0) {
    net = 0;
    ++arg;
  }
  if (argc - arg < 2 || argv[arg][0] != '/' || argv[arg + 1][0] != '/') {
    fprintf(stderr, "usage: corral-bench-bare [--no-net] /WORKSPACE /CMD [ARGS...]\n");
    return 2;
  }
  int go[2];
  if (pipe2(go, O_CLOEXEC) != 0) die("pipe");
  struct clone_args ca;
  memset(&ca, 0, sizeof ca);
  ca.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP |
             (net ? CLONE_NEWNET : 0);
  ca.exit_signal = SIGCHLD;
  long pid = syscall(SYS_clone3, &ca, sizeof ca);
  if (pid < 0) die("clone3");
  if (pid == 0) {
    close(go[1]);
    return child(argv[arg], argv + arg + 1, go[0]);
  }
  close(go[0]);
  char path[64], map[64];
  snprintf(path, sizeof path, "/proc/%ld/setgroups", pid);
  writeFile(path, "deny");
  snprintf(path, sizeof path, "/proc/%ld/uid_map", pid);
  snprintf(map, sizeof map, "%u %u 1", (unsigned)getuid(), (unsigned)getuid());
  writeFile(path, map);
  snprintf(path, sizeof path, "/proc/%ld/gid_map", pid);
  snprintf(map, sizeof map, "%u %u 1", (unsigned)getgid(), (unsigned)getgid());
  writeFile(path, map);
  if (write(go[1], "g", 1) != 1) die("release the child");
  int status = 0;
  if (waitpid((pid_t)pid, &status, 0) < 0) die("waitpid");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
