// SPDX-License-Identifier: Apache-2.0
// The credential sentinel guest: makes one leased corral_http request, then shows everything
// it can see: the response, its arguments, its environment and the whole of its linear memory
// (raw, after a "memory:" line). A secret anywhere the guest could reach would be in its output.
//   http_dump URL LEASE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "corral_guest.h"
#include "corral_http.h"

extern char** environ;

int main(int argc, char** argv) {
  if (argc != 3) corral_fail(CORRAL_EXIT_USAGE, "usage: http_dump URL LEASE");
  corral_http_exchange x;
  if (corral_http_begin(&x, "GET", argv[1], "Accept: text/plain\n", argv[2], 0) != CORRAL_HTTP_OK ||
      corral_http_response(&x) != CORRAL_HTTP_OK)
    corral_fail(4, "request failed");
  printf("status=%u\nheaders:\n%s", x.status, x.headers);
  printf("body:\n");
  fflush(stdout);
  char buf[4096];
  for (uint32_t n = 1; n > 0;) {
    if (corral_http_response_read(x.handle, buf, sizeof buf, &n) != CORRAL_HTTP_OK) corral_fail(4, "read failed");
    corral_write_stdout(buf, n);
  }
  corral_http_end(&x);
  printf("args:\n");
  for (int i = 0; i < argc; ++i) printf("%s\n", argv[i]);
  printf("env:\n");
  for (char** e = environ; *e; ++e) printf("%s\n", *e);
  printf("memory:\n");
  fflush(stdout);
  const size_t bytes = corral_memory_pages() * CORRAL_WASM_PAGE;
  // Every byte of linear memory but address 0, including what the host wrote into it.
  const char* base = (const char*)(uintptr_t)1;
  return corral_write_stdout(base, bytes - 1) == 0 ? 0 : 1;
}
