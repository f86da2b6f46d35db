/* SPDX-License-Identifier: Apache-2.0 */
/* The corral_http SDK: the exchange as a struct, and header lookup. */
#include "corral_http.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

uint32_t corral_http_begin(corral_http_exchange* x, const char* method, const char* url, const char* headers,
                           const char* lease, int64_t body_len) {
  memset(x, 0, sizeof *x);
  return corral_http_request_open(method, strlen(method), url, strlen(url), headers ? headers : "",
                                  headers ? strlen(headers) : 0, lease ? lease : "", lease ? strlen(lease) : 0,
                                  body_len, &x->handle);
}

uint32_t corral_http_response(corral_http_exchange* x) {
  uint32_t len = 0;
  uint32_t e = corral_http_response_open(x->handle, &x->status, &len);
  if (e != CORRAL_HTTP_OK && e != CORRAL_HTTP_ENOTCAPABLE) return e;
  x->headers = malloc((size_t)len + 1);
  if (!x->headers) return CORRAL_HTTP_EIO;
  uint32_t h = corral_http_response_headers(x->handle, x->headers, len);
  if (h != CORRAL_HTTP_OK) return h;
  x->headers[len] = '\0';
  x->headers_len = len;
  return e;
}

const char* corral_http_header(const corral_http_exchange* x, const char* name, char* buf, size_t len) {
  const size_t n = strlen(name);
  for (const char* line = x->headers; line && *line;) {
    const char* nl = strchr(line, '\n');
    const size_t line_len = nl ? (size_t)(nl - line) : strlen(line);
    if (line_len > n + 1 && line[n] == ':' && strncasecmp(line, name, n) == 0) {
      const char* v = line + n + 1;
      while (*v == ' ') ++v;
      size_t vlen = (size_t)(line + line_len - v);
      if (vlen >= len) vlen = len - 1;
      memcpy(buf, v, vlen);
      buf[vlen] = '\0';
      return buf;
    }
    line = nl ? nl + 1 : NULL;
  }
  return NULL;
}

void corral_http_end(corral_http_exchange* x) {
  if (x->handle) corral_http_close(x->handle);
  free(x->headers);
  memset(x, 0, sizeof *x);
}
