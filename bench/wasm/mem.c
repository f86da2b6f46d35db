// SPDX-License-Identifier: Apache-2.0
// Memory-heavy kernel: a random cyclic walk through an array of 2^BITS u32 (default 24: 64 MiB;
// cache and TLB misses), after Sattolo's shuffle makes it one cycle. Built with
// -DCORRAL_BENCH_EXPORT=STEPS -DCORRAL_BENCH_BITS=B it is a module without WASI exporting run()
// (for wasm-interp, which has no WASI on Debian 12), its array static.
#include <stdint.h>

static uint32_t walk(uint32_t* next, uint32_t len, unsigned long steps) {
  for (uint32_t i = 0; i < len; ++i) next[i] = i;
  uint64_t s = 88172645463325252ull;  // xorshift
  for (uint32_t i = len - 1; i > 0; --i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    const uint32_t j = (uint32_t)(s % i);
    const uint32_t t = next[i];
    next[i] = next[j];
    next[j] = t;
  }
  uint32_t at = 0;
  for (unsigned long k = 0; k < steps; ++k) at = next[at];
  return at;
}

#ifdef CORRAL_BENCH_EXPORT
static uint32_t array[1u << CORRAL_BENCH_BITS];
__attribute__((export_name("run"))) uint32_t run(void) { return walk(array, 1u << CORRAL_BENCH_BITS, CORRAL_BENCH_EXPORT); }
#else
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  const unsigned long steps = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000000;
  const unsigned bits = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 24;
  if (bits < 4 || bits > 28) return 2;
  uint32_t* next = malloc(sizeof(uint32_t) << bits);
  if (!next) return 1;
  printf("%u\n", walk(next, 1u << bits, steps));
  return 0;
}
#endif
