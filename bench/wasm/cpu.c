// SPDX-License-Identifier: Apache-2.0
// CPU-bound kernel: total Collatz steps for every n below N (integer ALU, branches, no memory).
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  const unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000000;
  unsigned long long total = 0;
  for (unsigned long i = 1; i < n; ++i) {
    unsigned long long x = i;
    while (x != 1) {
      x = (x & 1) ? 3 * x + 1 : x >> 1;
      ++total;
    }
  }
  printf("%llu\n", total);
  return 0;
}
