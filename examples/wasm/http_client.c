/* SPDX-License-Identifier: Apache-2.0 */
/* Example guest: a small curl. Sends one request through corral_http and streams the
 * response body to stdout; a request body, if any, is streamed from stdin (-T) or given (-d).
 *
 *   corral wasm run --allow http://127.0.0.1:8080 http_client.wasm -- http://127.0.0.1:8080/hello
 *   corral wasm run --credential api=API_TOKEN@https://api.example.com http_client.wasm -- \
 *       -L api https://api.example.com/v1/models
 *
 * Options: -X METHOD, -H "Name: value" (repeatable), -d BODY, -T (body from stdin, chunked),
 * -L LEASE (a --credential name), -i (response headers before the body).
 * Exit: 0 for any response, 3 when the egress proxy refused (its line on stderr), 4 on
 * another corral_http error, 2 on usage. The status goes to stderr as "guest: status N". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral_guest.h"
#include "corral_http.h"

static void usage(void) { corral_fail(CORRAL_EXIT_USAGE, "usage: http_client [-X M] [-H H]... [-d B | -T] [-L LEASE] [-i] URL"); }

static void check(uint32_t e, const char* what) {
  if (e == CORRAL_HTTP_OK) return;
  fprintf(stderr, "guest: %s: corral_http error %u\n", what, e);
  exit(4);
}

int main(int argc, char** argv) {
  const char *method = NULL, *body = NULL, *lease = NULL, *url = NULL;
  int from_stdin = 0, show_headers = 0;
  size_t hcap = 1, hlen = 0;
  char* headers = calloc(1, 1);
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (!strcmp(a, "-X") && i + 1 < argc) method = argv[++i];
    else if (!strcmp(a, "-d") && i + 1 < argc) body = argv[++i];
    else if (!strcmp(a, "-L") && i + 1 < argc) lease = argv[++i];
    else if (!strcmp(a, "-T")) from_stdin = 1;
    else if (!strcmp(a, "-i")) show_headers = 1;
    else if (!strcmp(a, "-H") && i + 1 < argc) {
      const size_t n = strlen(argv[++i]);
      headers = realloc(headers, hcap += n + 1);
      if (!headers) corral_fail(CORRAL_EXIT_FAILURE, "out of memory");
      memcpy(headers + hlen, argv[i], n);
      hlen += n;
      headers[hlen++] = '\n';
      headers[hlen] = '\0';
    } else if (a[0] != '-' && !url) url = a;
    else usage();
  }
  if (!url || (body && from_stdin)) usage();
  if (!method) method = body || from_stdin ? "POST" : "GET";

  corral_http_exchange x;
  const int64_t body_len = from_stdin ? -1 : body ? (int64_t)strlen(body) : 0;
  check(corral_http_begin(&x, method, url, headers, lease, body_len), "request");
  char buf[16384];
  uint32_t n = 0;
  if (body) check(corral_http_request_write(x.handle, body, strlen(body), &n), "request body");
  for (ssize_t r; from_stdin && (r = read(0, buf, sizeof buf)) != 0;) {
    if (r < 0) corral_fail(CORRAL_EXIT_FAILURE, "reading stdin");
    check(corral_http_request_write(x.handle, buf, (size_t)r, &n), "request body");
  }
  const uint32_t e = corral_http_response(&x);
  if (e != CORRAL_HTTP_OK && e != CORRAL_HTTP_ENOTCAPABLE) check(e, "response");
  fprintf(stderr, "guest: status %u\n", x.status);
  if (show_headers && corral_write_stdout(x.headers, x.headers_len) != 0) return CORRAL_EXIT_FAILURE;
  for (;;) {
    check(corral_http_response_read(x.handle, buf, sizeof buf, &n), "response body");
    if (n == 0) break;
    /* A refusal's body is the proxy's one line: it goes to stderr, as corral's own would. */
    if (write(e == CORRAL_HTTP_OK ? 1 : 2, buf, n) != (ssize_t)n) return CORRAL_EXIT_FAILURE;
  }
  corral_http_end(&x);
  free(headers);
  return e == CORRAL_HTTP_OK ? 0 : 3;
}
