/* SPDX-License-Identifier: Apache-2.0 */
/* corral_http v1 (docs/wasm-abi.md, "HTTP"): the raw imports, and a small streaming client
 * on top of them. Every request goes to corral's egress proxy, which decides it by the run's
 * --allow grants (scheme, host and port); a --credential lease is named, never held. */
#ifndef CORRAL_HTTP_H
#define CORRAL_HTTP_H

#include <stddef.h>
#include <stdint.h>

/* WASI errnos the calls return (wasi/api.h). */
#define CORRAL_HTTP_OK 0
#define CORRAL_HTTP_EBADF 8
#define CORRAL_HTTP_EFAULT 21
#define CORRAL_HTTP_EINVAL 28
#define CORRAL_HTTP_EIO 29
#define CORRAL_HTTP_EMFILE 33
#define CORRAL_HTTP_ENOTSUP 58 /* https:// on a host without OpenSSL 3 */
#define CORRAL_HTTP_ENOTCAPABLE 76 /* refused by the egress proxy (the response says why) */

#define CORRAL_HTTP_IMPORT(name) __attribute__((import_module("corral_http"), import_name(#name)))

/* body_len: the exact bytes request_write will send, or -1 for a streamed (chunked) body. */
CORRAL_HTTP_IMPORT(request_open)
uint32_t corral_http_request_open(const char* method, size_t method_len, const char* url, size_t url_len,
                                  const char* headers, size_t headers_len, const char* lease, size_t lease_len,
                                  int64_t body_len, uint32_t* handle);
CORRAL_HTTP_IMPORT(request_write)
uint32_t corral_http_request_write(uint32_t handle, const void* buf, size_t len, uint32_t* written);
CORRAL_HTTP_IMPORT(response_open)
uint32_t corral_http_response_open(uint32_t handle, uint32_t* status, uint32_t* headers_len);
CORRAL_HTTP_IMPORT(response_headers)
uint32_t corral_http_response_headers(uint32_t handle, char* buf, size_t len);
CORRAL_HTTP_IMPORT(response_read)
uint32_t corral_http_response_read(uint32_t handle, void* buf, size_t len, uint32_t* read);
CORRAL_HTTP_IMPORT(close)
uint32_t corral_http_close(uint32_t handle);

/* The SDK (corral_http.c). */
typedef struct {
  uint32_t handle;
  uint32_t status;
  char* headers; /* "Name: value\n" lines, NUL-terminated, malloc'd */
  size_t headers_len;
} corral_http_exchange;

/* Opens a request; headers is "Name: value\n" lines or NULL, lease a --credential name or NULL. */
uint32_t corral_http_begin(corral_http_exchange* x, const char* method, const char* url, const char* headers,
                           const char* lease, int64_t body_len);
/* Ends the request body and reads the response head into x. ENOTCAPABLE: the proxy refused;
 * x still holds its response (status, X-Corral-Denied, and the refusal line as the body). */
uint32_t corral_http_response(corral_http_exchange* x);
/* The value of a response header (case-insensitive name) copied into buf, or NULL. */
const char* corral_http_header(const corral_http_exchange* x, const char* name, char* buf, size_t len);
void corral_http_end(corral_http_exchange* x);

#endif
