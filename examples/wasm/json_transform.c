/* SPDX-License-Identifier: Apache-2.0 */
/* Example guest: reads one JSON document on stdin, checks it strictly (RFC 8259) and writes
 * it back minified, with every object key prefixed by the value of --env KEY_PREFIX (if
 * any). Invalid JSON: one line on stderr and exit 1. No file, network or other grant needed:
 *
 *   echo '{"a": [1, 2, {"b": null}]}' | corral wasm run --env KEY_PREFIX=x_ json_transform.wasm
 *   {"x_a":[1,2,{"x_b":null}]}
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral_guest.h"

typedef struct {
  const char* p;
  const char* end;
  char* out;
  size_t n, cap;
  const char* prefix;
  int depth;
} Json;

static void emit(Json* j, const char* s, size_t len) {
  if (j->n + len > j->cap) {
    j->cap = (j->n + len) * 2 + 64;
    j->out = realloc(j->out, j->cap);
    if (!j->out) corral_fail(CORRAL_EXIT_FAILURE, "out of memory");
  }
  memcpy(j->out + j->n, s, len);
  j->n += len;
}

static void ws(Json* j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static int value(Json* j);

static int string(Json* j, int is_key) {
  const char* start = j->p++;
  while (j->p < j->end && *j->p != '"') {
    unsigned char c = (unsigned char)*j->p;
    if (c < 0x20) return 0;
    if (c == '\\') {
      if (++j->p >= j->end) return 0;
      if (*j->p == 'u') {
        for (int i = 0; i < 4; ++i)
          if (++j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p)) return 0;
      } else if (!strchr("\"\\/bfnrt", *j->p)) {
        return 0;
      }
    }
    j->p++;
  }
  if (j->p >= j->end) return 0;
  j->p++;
  emit(j, "\"", 1);
  if (is_key && j->prefix) emit(j, j->prefix, strlen(j->prefix));
  emit(j, start + 1, (size_t)(j->p - start - 1));
  return 1;
}

static int number(Json* j) {
  const char* s = j->p;
  if (j->p < j->end && *j->p == '-') j->p++;
  if (j->p >= j->end) return 0;
  if (*j->p == '0') j->p++;
  else if (*j->p >= '1' && *j->p <= '9') while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
  else return 0;
  if (j->p < j->end && *j->p == '.') {
    if (++j->p >= j->end || *j->p < '0' || *j->p > '9') return 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
  }
  if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
    j->p++;
    if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') return 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
  }
  emit(j, s, (size_t)(j->p - s));
  return 1;
}

static int literal(Json* j, const char* word) {
  size_t len = strlen(word);
  if ((size_t)(j->end - j->p) < len || memcmp(j->p, word, len) != 0) return 0;
  j->p += len;
  emit(j, word, len);
  return 1;
}

static int container(Json* j, char open, char close) {
  if (++j->depth > 256) return 0;
  j->p++;
  emit(j, &open, 1);
  ws(j);
  if (j->p < j->end && *j->p == close) {
    j->p++;
  } else {
    for (;;) {
      ws(j);
      if (open == '{') {
        if (j->p >= j->end || *j->p != '"' || !string(j, 1)) return 0;
        ws(j);
        if (j->p >= j->end || *j->p != ':') return 0;
        j->p++;
        emit(j, ":", 1);
      }
      if (!value(j)) return 0;
      ws(j);
      if (j->p < j->end && *j->p == ',') {
        j->p++;
        emit(j, ",", 1);
        continue;
      }
      if (j->p < j->end && *j->p == close) {
        j->p++;
        break;
      }
      return 0;
    }
  }
  emit(j, &close, 1);
  j->depth--;
  return 1;
}

static int value(Json* j) {
  ws(j);
  if (j->p >= j->end) return 0;
  switch (*j->p) {
    case '{': return container(j, '{', '}');
    case '[': return container(j, '[', ']');
    case '"': return string(j, 0);
    case 't': return literal(j, "true");
    case 'f': return literal(j, "false");
    case 'n': return literal(j, "null");
    default: return number(j);
  }
}

int main(void) {
  size_t len = 0;
  char* in = corral_read_stdin(16u << 20, &len);
  if (!in) corral_fail(CORRAL_EXIT_FAILURE, "cannot read stdin (or it is over 16 MiB)");
  Json j = {in, in + len, NULL, 0, 0, getenv("KEY_PREFIX"), 0};
  if (!value(&j)) corral_fail(CORRAL_EXIT_FAILURE, "invalid JSON");
  ws(&j);
  if (j.p != j.end) corral_fail(CORRAL_EXIT_FAILURE, "invalid JSON: trailing bytes");
  emit(&j, "\n", 1);
  if (corral_write_stdout(j.out, j.n) != 0) corral_fail(CORRAL_EXIT_FAILURE, "cannot write stdout");
  return CORRAL_EXIT_OK;
}
