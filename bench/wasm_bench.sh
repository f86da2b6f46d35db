#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The wasm backend's benchmarks (docs/benchmarks-wasm.md): guest speed against native C, with
# wabt's interpreter and node's WASI as peer rows; cached start against a cold `corral exec`;
# compile time per 100 KB. Usage: bench/wasm_bench.sh [BUILD_DIR]. Prints markdown tables.
# WASM_BENCH_ONLY=start runs the start table alone.
# A benchmark, not a test: nothing here passes or fails on a number.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
src=$(cd "$(dirname "$0")/wasm" && pwd)
corral=$build/corral
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CORRAL_WASM_CACHE=$work/cache
runs=${WASM_BENCH_RUNS:-3}

best() {  # best wall time in ms of $runs runs of "$@" (output discarded)
  local best=
  for ((i = 0; i < runs; ++i)); do
    local t0 t1
    t0=$(date +%s%N); "$@" > /dev/null 2>&1 || true; t1=$(date +%s%N)
    local us=$(( (t1 - t0) / 1000 ))
    [[ -z $best || $us -lt $best ]] && best=$us
  done
  awk "BEGIN{printf \"%.1f\", $best / 1000}"
}
ratio() { awk "BEGIN{printf \"%.2fx\", $1 / $2}"; }  # speed relative to native: native / other
wall_us() { local t0 t1; t0=$(date +%s%N); "$@" > /dev/null 2>&1 || true; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000 )); }

# Cached start against a cold exec, interleaved (one of each per round, so a burst of load
# hits both), best of WASM_BENCH_START_RUNS.
start_table() {
  printf '(module (memory (export "memory") 1) (func (export "_start")))' > "$work/nop.wat"
  wat2wasm "$work/nop.wat" -o "$work/nop.wasm"
  "$corral" wasm compile "$work/nop.wasm" > /dev/null
  local n=${WASM_BENCH_START_RUNS:-10} e="" s="" us
  for ((r = 0; r < n; ++r)); do
    us=$(wall_us "$corral" exec -- /bin/true); [[ -z $e || $us -lt $e ]] && e=$us
    us=$(wall_us "$corral" wasm run "$work/nop.wasm"); [[ -z $s || $us -lt $s ]] && s=$us
  done
  echo "| start (best of $n, interleaved) | ms |"
  echo "|---|---|"
  echo "| corral exec -- /bin/true (cold sandbox) | $(awk "BEGIN{printf \"%.1f\", $e / 1000}") |"
  echo "| corral wasm run nop.wasm (cached module) | $(awk "BEGIN{printf \"%.1f\", $s / 1000}") |"
  echo "| difference | $(awk "BEGIN{printf \"%+.2f\", ($s - $e) / 1000}") |"
  echo
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $(uname -r)"
echo
if [[ ${WASM_BENCH_ONLY:-} == start ]]; then
  start_table
  exit 0
fi
declare -A arg=([cpu]="2000000" [mem]="20000000 24")
for k in cpu mem; do
  gcc -O2 -o "$work/$k.native" "$src/$k.c"
  clang --target=wasm32-wasi -O2 -o "$work/$k.wasm" "$src/$k.c"
  "$corral" wasm compile "$work/$k.wasm" > "$work/$k.compile"
done
echo "| kernel | native (gcc -O2) | corral wasm run | speed vs native | node WASI | speed vs native |"
echo "|---|---|---|---|---|---|"
for k in cpu mem; do
  # shellcheck disable=SC2086 # the kernel's arguments
  n=$(best "$work/$k.native" ${arg[$k]})
  # shellcheck disable=SC2086
  w=$(best "$corral" wasm run --memory 128M "$work/$k.wasm" -- ${arg[$k]})
  j="-"; jr="-"
  if command -v node > /dev/null; then
    # shellcheck disable=SC2086
    j=$(best node --no-warnings "$src/wasi_node.mjs" "$work/$k.wasm" ${arg[$k]}); jr=$(ratio "$n" "$j"); j="$j ms"
  fi
  echo "| $k (${arg[$k]}) | $n ms | $w ms | $(ratio "$n" "$w") | $j | $jr |"
done
echo
# wabt's interpreter: Debian 12's wasm-interp has no WASI, so it runs the same kernels built
# without WASI (run() exported, sizes fixed at build time), at a size it finishes in seconds;
# native runs the same size for the ratio.
if command -v wasm-interp > /dev/null; then
  clang --target=wasm32 -nostdlib -O2 -Wl,--no-entry -DCORRAL_BENCH_EXPORT=200000 -o "$work/cpu-interp.wasm" "$src/cpu.c"
  clang --target=wasm32 -nostdlib -O2 -Wl,--no-entry -DCORRAL_BENCH_EXPORT=2000000 -DCORRAL_BENCH_BITS=22 \
    -o "$work/mem-interp.wasm" "$src/mem.c"
  echo "| kernel, smaller | native | wasm-interp | speed vs native |"
  echo "|---|---|---|---|"
  n=$(best "$work/cpu.native" 200000); i=$(best wasm-interp "$work/cpu-interp.wasm" --run-all-exports)
  echo "| cpu (200000) | $n ms | $i ms | $(ratio "$n" "$i") |"
  n=$(best "$work/mem.native" 2000000 22); i=$(best wasm-interp "$work/mem-interp.wasm" --run-all-exports)
  echo "| mem (2000000 22) | $n ms | $i ms | $(ratio "$n" "$i") |"
  echo
fi
start_table
echo "| module | bytes | compile (wasm2c + cc -O3, sandboxed) | per 100 KB |"
echo "|---|---|---|---|"
for k in cpu mem; do
  bytes=$(stat -c %s "$work/$k.wasm")
  ms=$(sed -n 's/.*compile_ms=\([0-9.]*\).*/\1/p' "$work/$k.compile")
  echo "| $k.wasm | $bytes | $ms ms | $(awk "BEGIN{printf \"%.0f\", $ms * 102400 / $bytes}") ms |"
done
