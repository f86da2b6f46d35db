// SPDX-License-Identifier: Apache-2.0
// corral-probe kernel-surface ops: filtered syscalls, foreign ABIs, namespaces, terminal ioctls.
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "probe.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

// --- try-syscall: each call is harmless when unfiltered (EFAULT/EBADF/EINVAL/ESRCH). ---

static long sc_mount(void) { return syscall(SYS_mount, PROBE_BAD_PTR, PROBE_BAD_PTR, PROBE_BAD_PTR, 0UL, PROBE_BAD_PTR); }
static long sc_umount2(void) { return syscall(SYS_umount2, PROBE_BAD_PTR, 0); }
static long sc_pivot_root(void) { return syscall(SYS_pivot_root, PROBE_BAD_PTR, PROBE_BAD_PTR); }
static long sc_setns(void) { return syscall(SYS_setns, -1, 0); }
static long sc_unshare_user(void) { return syscall(SYS_unshare, CLONE_NEWUSER); }
static long sc_keyctl(void) { return syscall(SYS_keyctl, 1 /* JOIN_SESSION_KEYRING */, PROBE_BAD_PTR); }
static long sc_add_key(void) { return syscall(SYS_add_key, PROBE_BAD_PTR, PROBE_BAD_PTR, PROBE_BAD_PTR, 0, 0); }
static long sc_request_key(void) { return syscall(SYS_request_key, PROBE_BAD_PTR, PROBE_BAD_PTR, PROBE_BAD_PTR, 0); }
static long sc_bpf(void) { return syscall(SYS_bpf, 5 /* BPF_PROG_LOAD */, PROBE_BAD_PTR, 16); }
static long sc_perf_event_open(void) { return syscall(SYS_perf_event_open, PROBE_BAD_PTR, 0, -1, -1, 0); }
static long sc_userfaultfd(void) { return syscall(SYS_userfaultfd, 0x7ffffff0); }
static long sc_io_uring_setup(void) { return syscall(SYS_io_uring_setup, 1, PROBE_BAD_PTR); }
static long sc_io_uring_enter(void) { return syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0); }
static long sc_io_uring_register(void) { return syscall(SYS_io_uring_register, -1, 0, NULL, 0); }
// Undefined flag bit and too many segments: EINVAL even for root, never an unload.
static long sc_kexec_load(void) { return syscall(SYS_kexec_load, 0UL, 17UL, NULL, 0x8000UL); }
static long sc_kexec_file_load(void) { return syscall(SYS_kexec_file_load, -1, -1, 0UL, PROBE_BAD_PTR, 0x8000UL); }
static long sc_init_module(void) { return syscall(SYS_init_module, PROBE_BAD_PTR, 1UL, PROBE_BAD_PTR); }
static long sc_finit_module(void) { return syscall(SYS_finit_module, -1, PROBE_BAD_PTR, 0); }
static long sc_delete_module(void) { return syscall(SYS_delete_module, PROBE_BAD_PTR, 0); }
static long sc_open_by_handle_at(void) { return syscall(SYS_open_by_handle_at, AT_FDCWD, PROBE_BAD_PTR, O_RDONLY); }
static long sc_name_to_handle_at(void) {
  return syscall(SYS_name_to_handle_at, AT_FDCWD, PROBE_BAD_PTR, PROBE_BAD_PTR, PROBE_BAD_PTR, 0);
}
static long sc_ptrace(void) { return syscall(SYS_ptrace, PTRACE_ATTACH, 0x3fffffff, 0, 0); }
static long sc_process_vm_readv(void) {
  return syscall(SYS_process_vm_readv, getpid(), PROBE_BAD_PTR, 1, PROBE_BAD_PTR, 1, 0);
}
static long sc_process_vm_writev(void) {
  return syscall(SYS_process_vm_writev, getpid(), PROBE_BAD_PTR, 1, PROBE_BAD_PTR, 1, 0);
}
static long sc_iopl(void) { return syscall(SYS_iopl, 4); }
static long sc_ioperm(void) { return syscall(SYS_ioperm, 0UL, 0UL, 0); }
static long sc_clone3(void) { return syscall(SYS_clone3, PROBE_BAD_PTR, 88UL); }

// personality never fails on its own: success is read back, only a filter makes it fail.
static long sc_personality(void) {
  long old = syscall(SYS_personality, 0xffffffffUL);
  if (old < 0) return old;
  long r = syscall(SYS_personality, (unsigned long)old | ADDR_NO_RANDOMIZE);
  if (r < 0) return r;
  long now = syscall(SYS_personality, 0xffffffffUL);
  if (now >= 0 && !(now & ADDR_NO_RANDOMIZE)) {
    errno = EINVAL;  // did not stick: report as refused
    return -1;
  }
  return 0;
}

static long clone_with(unsigned long flags) {
  long pid = syscall(SYS_clone, flags | SIGCHLD, 0UL, 0UL, 0UL, 0UL);
  if (pid == 0) _exit(0);
  if (pid > 0) waitpid((pid_t)pid, NULL, 0);
  return pid < 0 ? -1 : 0;
}
static long sc_clone_newuser(void) { return clone_with(CLONE_NEWUSER); }

struct sc_entry {
  const char *name;
  long (*fn)(void);
};
static const struct sc_entry kSyscalls[] = {
    {"mount", sc_mount}, {"umount2", sc_umount2}, {"pivot_root", sc_pivot_root}, {"setns", sc_setns},
    {"unshare-user", sc_unshare_user}, {"clone-newuser", sc_clone_newuser}, {"keyctl", sc_keyctl},
    {"add_key", sc_add_key}, {"request_key", sc_request_key}, {"bpf", sc_bpf},
    {"perf_event_open", sc_perf_event_open}, {"userfaultfd", sc_userfaultfd},
    {"io_uring_setup", sc_io_uring_setup}, {"io_uring_enter", sc_io_uring_enter},
    {"io_uring_register", sc_io_uring_register}, {"kexec_load", sc_kexec_load},
    {"kexec_file_load", sc_kexec_file_load}, {"init_module", sc_init_module},
    {"finit_module", sc_finit_module}, {"delete_module", sc_delete_module},
    {"open_by_handle_at", sc_open_by_handle_at}, {"name_to_handle_at", sc_name_to_handle_at},
    {"ptrace", sc_ptrace}, {"process_vm_readv", sc_process_vm_readv},
    {"process_vm_writev", sc_process_vm_writev}, {"iopl", sc_iopl}, {"ioperm", sc_ioperm},
    {"personality-addr-no-randomize", sc_personality}, {"clone3", sc_clone3},
};

static int op_try_syscall(int argc, char **argv) {
  if (argc != 2) return probe_usage("try-syscall NAME");
  for (size_t i = 0; i < sizeof kSyscalls / sizeof kSyscalls[0]; ++i) {
    if (strcmp(kSyscalls[i].name, argv[1]) != 0) continue;
    errno = 0;
    long r = kSyscalls[i].fn();
    return r >= 0 ? probe_ok(NULL) : probe_errno(errno, NULL);
  }
  return probe_usage("try-syscall: unknown syscall '%s'", argv[1]);
}

// --- namespaces ---

static const struct {
  const char *name;
  unsigned long flag;
} kNamespaces[] = {
    {"user", CLONE_NEWUSER}, {"mnt", CLONE_NEWNS}, {"net", CLONE_NEWNET}, {"pid", CLONE_NEWPID},
    {"ipc", CLONE_NEWIPC}, {"uts", CLONE_NEWUTS}, {"cgroup", CLONE_NEWCGROUP}, {"time", CLONE_NEWTIME},
};

static long ns_flag(const char *name) {
  for (size_t i = 0; i < sizeof kNamespaces / sizeof kNamespaces[0]; ++i)
    if (strcmp(kNamespaces[i].name, name) == 0) return (long)kNamespaces[i].flag;
  return -1;
}

static int op_unshare(int argc, char **argv) {
  long flag = argc == 2 ? ns_flag(argv[1]) : -1;
  if (flag < 0) return probe_usage("%s user|mnt|net|pid|ipc|uts|cgroup|time", argv[0]);
  long r = strcmp(argv[0], "clone-ns") == 0 ? clone_with((unsigned long)flag)
                                            : syscall(SYS_unshare, (unsigned long)flag);
  return r == 0 ? probe_ok(NULL) : probe_errno(errno, NULL);
}

static int op_ns_ids(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("ns-ids");
  char out[1024] = "", path[64], target[128];
  for (size_t i = 0; i < sizeof kNamespaces / sizeof kNamespaces[0]; ++i) {
    snprintf(path, sizeof path, "/proc/self/ns/%s", kNamespaces[i].name);
    ssize_t n = readlink(path, target, sizeof target - 1);
    target[n < 0 ? 0 : n] = '\0';
    char *id = strchr(target, '[');
    size_t len = strlen(out);
    snprintf(out + len, sizeof out - len, "%s%s=%.*s", len ? " " : "", kNamespaces[i].name,
             id ? (int)strcspn(id + 1, "]") : 1, id ? id + 1 : "-");
  }
  return probe_ok("%s", out);
}

// Becomes root of a fresh user+network namespace, then runs an op: the controls' way to
// show an op succeeds for a process that holds capabilities (CAP_NET_RAW, CAP_SYS_ADMIN).
static int op_as_userns_root(int argc, char **argv) {
  if (argc < 2) return probe_usage("as-userns-root OP [ARGS]");
  uid_t uid = getuid();
  gid_t gid = getgid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) return probe_errno(errno, "stage=unshare");
  char map[64];
  int fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (write(fd, "deny", 4) < 0) { /* older kernels: no file, nothing to deny */ }
    close(fd);
  }
  const char *files[2] = {"/proc/self/uid_map", "/proc/self/gid_map"};
  unsigned ids[2] = {uid, gid};
  for (int i = 0; i < 2; ++i) {
    int len = snprintf(map, sizeof map, "0 %u 1\n", ids[i]);
    fd = open(files[i], O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, map, (size_t)len) != len) return probe_errno(errno, "stage=%s", files[i]);
    close(fd);
  }
  return probe_dispatch(argc - 1, argv + 1);
}

// --- foreign ABIs: a filter that knows only x86_64 must not let these through. ---

static int op_int80(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("int80");
  long ret;
  // i386 getpid is 20. The kernel zeroes r8-r11 on return from int $0x80.
  __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "cc", "r8", "r9", "r10", "r11");
  return ret >= 0 ? probe_ok("pid=%ld", ret) : probe_errno((int)-ret, NULL);
}

static int op_x32(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("x32");
  long ret = syscall(0x40000000L | SYS_getpid);
  return ret >= 0 ? probe_ok("pid=%ld", ret) : probe_errno(errno, NULL);
}

// --- terminal injection ---

// The high-bit variant (CVE-2019-10063): the kernel truncates cmd to 32 bits, a naive
// 64-bit filter comparison does not.
static unsigned long ioctl_cmd(const char *name, int high) {
  unsigned long cmd = strcmp(name, "tioclinux") == 0 ? TIOCLINUX : TIOCSTI;
  return high ? (0x123UL << 32) | cmd : cmd;
}

// On fd -1: unfiltered gives EBADF, the filter's refusal gives EPERM.
static int op_ioctl_badfd(int argc, char **argv) {
  if (argc < 2 || argc > 3 || (strcmp(argv[1], "tiocsti") && strcmp(argv[1], "tioclinux")))
    return probe_usage("ioctl-badfd tiocsti|tioclinux [high]");
  long r = syscall(SYS_ioctl, -1, ioctl_cmd(argv[1], argc == 3), PROBE_BAD_PTR);
  return r == 0 ? probe_ok(NULL) : probe_errno(errno, NULL);
}

// The real attack: push 'Z' into fds 0-2 and /dev/tty, plainly and with the high bits set.
static int op_tiocsti(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("tiocsti");
  char out[512] = "";
  int injected = 0;
  int tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
  int tty_err = errno;
  const int fds[4] = {0, 1, 2, tty};
  const char *names[4] = {"fd0", "fd1", "fd2", "tty"};
  for (int i = 0; i < 4; ++i) {
    for (int high = 0; high < 2; ++high) {
      const char *res;
      char c = 'Z';
      if (fds[i] < 0) {
        res = probe_errname(tty_err);
      } else if (syscall(SYS_ioctl, fds[i], ioctl_cmd("tiocsti", high), &c) == 0) {
        res = "INJECTED";
        ++injected;
      } else {
        res = probe_errname(errno);
      }
      size_t len = strlen(out);
      snprintf(out + len, sizeof out - len, " %s%s=%s", names[i], high ? "hi" : "", res);
    }
  }
  pid_t sid = 0;
  const char *sid_res = ioctl(0, TIOCGSID, &sid) == 0 ? "ctty" : probe_errname(errno);
  if (tty >= 0) close(tty);
  return injected ? probe_ok("injected=%d fd0sid=%s%s", injected, sid_res, out)
                  : probe_refused("injected=0 fd0sid=%s%s", sid_res, out);
}

// --- identity ---

static void map_line(const char *path, char *out, size_t cap) {
  char buf[1024];
  long n = probe_slurp(path, buf, sizeof buf);
  if (n < 0) {
    snprintf(out, cap, "%s", probe_errname((int)-n));
    return;
  }
  // "   1000      12345          1\n" -> "1000:12345:1;"
  size_t o = 0;
  int in_num = 0, fields = 0;
  for (long i = 0; i < n && o + 2 < cap; ++i) {
    char c = buf[i];
    if (c >= '0' && c <= '9') {
      if (!in_num && fields % 3) out[o++] = ':';
      out[o++] = c;
      in_num = 1;
    } else if (in_num) {
      in_num = 0;
      if (++fields % 3 == 0) out[o++] = ';';
    }
  }
  out[o] = '\0';
}

static int op_ids(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("ids");
  uid_t r, e, s;
  gid_t gr, ge, gs;
  getresuid(&r, &e, &s);
  getresgid(&gr, &ge, &gs);
  gid_t groups[64];
  int ng = getgroups(64, groups);
  char gl[512] = "", umap[256], gmap[256], host[128] = "", cwd[1024] = "", cwd_esc[4096] = "";
  for (int i = 0; i < ng; ++i) {
    size_t len = strlen(gl);
    snprintf(gl + len, sizeof gl - len, "%s%u", i ? "," : "", (unsigned)groups[i]);
  }
  map_line("/proc/self/uid_map", umap, sizeof umap);
  map_line("/proc/self/gid_map", gmap, sizeof gmap);
  gethostname(host, sizeof host - 1);
  if (getcwd(cwd, sizeof cwd)) probe_escape(cwd_esc, sizeof cwd_esc, cwd, strlen(cwd));
  return probe_ok("uid=%u euid=%u suid=%u gid=%u egid=%u sgid=%u groups=%s uid_map=%s gid_map=%s "
                  "hostname=%s cwd=%s pid=%d ppid=%d sid=%d pgid=%d",
                  r, e, s, gr, ge, gs, ng > 0 ? gl : "-", umap, gmap, host, cwd_esc, getpid(),
                  getppid(), getsid(0), getpgid(0));
}

// Capability sets, NoNewPrivs and seccomp mode from /proc/self/status.
static int op_caps(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return probe_usage("caps");
  static char buf[16384];
  long n = probe_slurp("/proc/self/status", buf, sizeof buf);
  if (n < 0) return probe_errno((int)-n, NULL);
  static const char *const kKeys[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"};
  char out[512] = "";
  for (size_t k = 0; k < sizeof kKeys / sizeof kKeys[0]; ++k) {
    char needle[32];
    snprintf(needle, sizeof needle, "\n%s:", kKeys[k]);
    const char *at = strstr(buf, needle);
    const char *value = "missing";
    size_t vlen = 7;
    if (at) {
      value = at + strlen(needle);
      value += strspn(value, " \t");
      vlen = strcspn(value, "\n");
    }
    size_t len = strlen(out);
    snprintf(out + len, sizeof out - len, "%s%s=%.*s", len ? " " : "", kKeys[k], (int)vlen, value);
  }
  return probe_ok("%s", out);
}

static int op_exec(int argc, char **argv) {
  if (argc < 2) return probe_usage("exec PATH [ARGS]");
  execv(argv[1], argv + 1);
  return probe_errno(errno, NULL);
}

const struct probe_op probe_sys_ops[] = {
    {"try-syscall", "NAME (mount, bpf, clone3, ... see source)", op_try_syscall},
    {"unshare", "user|mnt|net|pid|ipc|uts|cgroup|time", op_unshare},
    {"clone-ns", "user|mnt|net|pid|ipc|uts|cgroup|time", op_unshare},
    {"ns-ids", "", op_ns_ids},
    {"as-userns-root", "OP [ARGS] (control: run OP as root of a new user+net namespace)", op_as_userns_root},
    {"int80", "(i386 getpid via int $0x80)", op_int80},
    {"x32", "(x32 getpid)", op_x32},
    {"ioctl-badfd", "tiocsti|tioclinux [high]", op_ioctl_badfd},
    {"tiocsti", "(inject into fds 0-2 and /dev/tty)", op_tiocsti},
    {"ids", "", op_ids},
    {"caps", "", op_caps},
    {"exec", "PATH [ARGS]", op_exec},
    {NULL, NULL, NULL},
};
