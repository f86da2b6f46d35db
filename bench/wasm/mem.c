// SPDX-License-Identifier: Apache-2.0
// Memory-heavy kernel: a random cyclic walk through a 64 MiB array (cache and TLB misses).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  const uint32_t len = 16u << 20;  // 16 Mi u32 = 64 MiB
  const unsigned long steps = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000000;
  uint32_t* next = malloc(sizeof(uint32_t) * len);
  if (!next) return 1;
  for (uint32_t i = 0; i < len; ++i) next[i] = i;
  uint64_t s = 88172645463325252ull;  // Sattolo's shuffle with xorshift: one cycle through all
  for (uint32_t i = len - 1; i > 0; --i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    uint32_t j = (uint32_t)(s % i);
    uint32_t t = next[i];
    next[i] = next[j];
    next[j] = t;
  }
  uint32_t at = 0;
  for (unsigned long k = 0; k < steps; ++k) at = next[at];
  printf("%u\n", at);
  return 0;
}
