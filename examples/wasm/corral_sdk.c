/* SPDX-License-Identifier: Apache-2.0 */
/* The corral wasm guest SDK: plain wasi-libc underneath, nothing corral-specific on the wire. */
#include "corral_guest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char* corral_read_stdin(size_t max, size_t* len) {
  size_t cap = 4096, n = 0;
  char* buf = malloc(cap + 1);
  if (!buf) return NULL;
  for (;;) {
    if (n == cap) {
      if (cap >= max) break;
      cap = cap * 2 > max ? max : cap * 2;
      char* grown = realloc(buf, cap + 1);
      if (!grown) {
        free(buf);
        return NULL;
      }
      buf = grown;
    }
    ssize_t r = read(0, buf + n, cap - n);
    if (r < 0) {
      free(buf);
      return NULL;
    }
    if (r == 0) {
      buf[n] = '\0';
      *len = n;
      return buf;
    }
    n += (size_t)r;
  }
  /* Full at max: one more byte means stdin held more than max. */
  char extra;
  if (read(0, &extra, 1) != 0) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

int corral_write_stdout(const char* buf, size_t len) {
  while (len > 0) {
    ssize_t w = write(1, buf, len);
    if (w <= 0) return -1;
    buf += w;
    len -= (size_t)w;
  }
  return 0;
}

void corral_fail(int status, const char* what) {
  fprintf(stderr, "guest: %s\n", what);
  exit(status < 1 || status > CORRAL_EXIT_MAX ? CORRAL_EXIT_FAILURE : status);
}

size_t corral_memory_pages(void) { return __builtin_wasm_memory_size(0); }
