// SPDX-License-Identifier: Apache-2.0
// corral-probe: a static multi-tool run inside sandboxes; `corral-probe OP [ARGS]` prints one line.
//
// Output: "ok ...", "errno=NAME ...", "refused ..." or, for ops that announce readiness,
// "ok ready ...". Exit 0: the op did what it tried; 1: it was refused or failed; 2: usage.
// Every op is harmless on a host without the sandbox (bad pointers, no writes outside the
// paths it is given), so the same op doubles as the test's unsandboxed control.
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe.h"

static void emit(const char *prefix, const char *fmt, va_list ap) {
  char line[65536 + 512];
  int n = snprintf(line, sizeof line, "%s", prefix);
  if (fmt && *fmt) {
    line[n++] = ' ';
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    if (m < 0) m = 0;
    n += m;
    if ((size_t)n > sizeof line - 2) n = (int)sizeof line - 2;
  }
  line[n++] = '\n';
  for (int off = 0; off < n;) {
    ssize_t w = write(STDOUT_FILENO, line + off, (size_t)(n - off));
    if (w <= 0) break;
    off += (int)w;
  }
}

int probe_ok(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit("ok", fmt, ap);
  va_end(ap);
  return kProbeDid;
}

int probe_errno(int err, const char *fmt, ...) {
  char prefix[64];
  snprintf(prefix, sizeof prefix, "errno=%s", probe_errname(err));
  va_list ap;
  va_start(ap, fmt);
  emit(prefix, fmt, ap);
  va_end(ap);
  return kProbeRefused;
}

int probe_refused(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit("refused", fmt, ap);
  va_end(ap);
  return kProbeRefused;
}

int probe_usage(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("corral-probe: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return kProbeUsage;
}

const char *probe_errname(int err) {
  static char buf[16];
  const char *name = strerrorname_np(err);
  if (name) return name;
  snprintf(buf, sizeof buf, "E%d", err);
  return buf;
}

void probe_escape(char *out, size_t cap, const char *data, size_t len) {
  static const char kHex[] = "0123456789abcdef";
  size_t n = strlen(out);
  for (size_t i = 0; i < len && n + 5 < cap; ++i) {
    unsigned char c = (unsigned char)data[i];
    if (c <= ' ' || c >= 0x7f || c == ',' || c == '\\') {
      out[n++] = '\\';
      out[n++] = 'x';
      out[n++] = kHex[c >> 4];
      out[n++] = kHex[c & 15];
    } else {
      out[n++] = (char)c;
    }
  }
  out[n] = '\0';
}

long long probe_number(const char *text) {
  if (!text || !*text) return -1;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || v < 0 || end == text) return -1;
  switch (*end) {
    case '\0': return v;
    case 'K': v <<= 10; break;
    case 'M': v <<= 20; break;
    case 'G': v <<= 30; break;
    default: return -1;
  }
  return end[1] == '\0' ? v : -1;
}

long probe_slurp(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return -errno;
  size_t n = 0;
  while (n + 1 < cap) {
    ssize_t r = read(fd, buf + n, cap - 1 - n);
    if (r < 0) {
      int err = errno;
      close(fd);
      return -err;
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  buf[n] = '\0';
  close(fd);
  return (long)n;
}

static const struct probe_op *const kTables[] = {probe_fs_ops, probe_sys_ops, probe_proc_ops,
                                                 probe_info_ops, probe_net_ops};

static void usage_all(void) {
  fputs("usage: corral-probe OP [ARGS]\n", stderr);
  for (size_t t = 0; t < sizeof kTables / sizeof kTables[0]; ++t)
    for (const struct probe_op *op = kTables[t]; op->name; ++op)
      fprintf(stderr, "  %s %s\n", op->name, op->args);
}

int probe_dispatch(int argc, char **argv) {
  if (argc < 1) {
    usage_all();
    return kProbeUsage;
  }
  for (size_t t = 0; t < sizeof kTables / sizeof kTables[0]; ++t)
    for (const struct probe_op *op = kTables[t]; op->name; ++op)
      if (strcmp(op->name, argv[0]) == 0) return op->fn(argc, argv);
  usage_all();
  return probe_usage("unknown op '%s'", argv[0]);
}

int main(int argc, char **argv) {
  // stdout is written with write(2) only; nothing buffered survives into a fork.
  return probe_dispatch(argc - 1, argv + 1);
}
