// SPDX-License-Identifier: Apache-2.0
// CPU-bound kernel: total Collatz steps for every n below N (integer ALU, branches, no memory).
// Built with -DCORRAL_BENCH_EXPORT=N it is a module without WASI exporting run() (Debian 12's
// wasm-interp has no WASI: wasm-interp --run-all-exports calls it).
#include <stdint.h>

static uint64_t collatz(unsigned long n) {
  uint64_t total = 0;
  for (unsigned long i = 1; i < n; ++i) {
    uint64_t x = i;
    while (x != 1) {
      x = (x & 1) ? 3 * x + 1 : x >> 1;
      ++total;
    }
  }
  return total;
}

#ifdef CORRAL_BENCH_EXPORT
__attribute__((export_name("run"))) uint64_t run(void) { return collatz(CORRAL_BENCH_EXPORT); }
#else
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  printf("%llu\n", (unsigned long long)collatz(argc > 1 ? strtoul(argv[1], NULL, 10) : 2000000));
  return 0;
}
#endif
