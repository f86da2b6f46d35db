// SPDX-License-Identifier: Apache-2.0
// corral-probe: shared output helpers and the op table every probe_*.c file contributes to.
#pragma once

#include <stddef.h>

// Exit statuses: the op did what it tried, was refused (or failed), or was called wrongly.
enum { kProbeDid = 0, kProbeRefused = 1, kProbeUsage = 2 };

// Invariant: an unmapped address. A syscall the filter lets through fails with EFAULT on it
// (or on an earlier argument check), so an unfiltered probe is harmless (bwrap try-syscall).
#define PROBE_BAD_PTR ((void *)1)

typedef int (*probe_fn)(int argc, char **argv);  // argv[0] is the op name

struct probe_op {
  const char *name;
  const char *args;  // usage text
  probe_fn fn;
};

// Each file's ops, terminated by a {NULL} entry.
extern const struct probe_op probe_fs_ops[];
extern const struct probe_op probe_sys_ops[];
extern const struct probe_op probe_proc_ops[];
extern const struct probe_op probe_info_ops[];
extern const struct probe_op probe_net_ops[];

// Runs argv[0] as an op (used by main and by as-userns-root).
int probe_dispatch(int argc, char **argv);

// One output line on stdout, written with a single write(2) so forks cannot duplicate it.
// "ok[ EXTRA]" -> kProbeDid.
int probe_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// "errno=NAME[ EXTRA]" -> kProbeRefused.
int probe_errno(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// "refused[ EXTRA]" -> kProbeRefused (multi-attempt ops where nothing got through).
int probe_refused(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// One line on stderr -> kProbeUsage.
int probe_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// errno as its symbolic name ("EPERM"); "E<number>" when glibc has none.
const char *probe_errname(int err);

// Appends `len` bytes to `out` (size `cap`, always NUL-terminated) with every byte outside
// printable ASCII, and space, ',' and '\\', escaped as \xNN: values stay one token.
void probe_escape(char *out, size_t cap, const char *data, size_t len);

// Parses a non-negative decimal (with optional K/M/G suffix for sizes); -1 on junk.
long long probe_number(const char *text);

// Reads up to cap-1 bytes of a file into buf (NUL-terminated); returns bytes or -errno.
long probe_slurp(const char *path, char *buf, size_t cap);
