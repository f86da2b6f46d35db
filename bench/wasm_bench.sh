#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The wasm backend's benchmarks (docs/benchmarks-wasm.md): guest speed against native, wabt's
# interpreter and node's WASI; cached start against a cold `corral exec`; compile time.
# Usage: bench/wasm_bench.sh [BUILD_DIR]. Prints a markdown table; numbers are best of 3.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
src=$(cd "$(dirname "$0")/wasm" && pwd)
corral=$build/corral
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CORRAL_WASM_CACHE=$work/cache

best() {  # best wall time in ms of 3 runs of "$@"
  local best=
  for _ in 1 2 3; do
    local t0 t1
    t0=$(date +%s%N); "$@" > /dev/null 2>&1 || true; t1=$(date +%s%N)
    local ms=$(( (t1 - t0) / 1000000 ))
    [[ -z $best || $ms -lt $best ]] && best=$ms
  done
  echo "$best"
}

for k in cpu mem; do
  gcc -O2 -o "$work/$k.native" "$src/$k.c"
  clang --target=wasm32-wasi -O2 -o "$work/$k.wasm" "$src/$k.c"
  "$corral" wasm compile "$work/$k.wasm" > "$work/$k.compile"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo
echo "| kernel | native | corral wasm run | wasm / native | wasm-interp | node WASI |"
echo "|---|---|---|---|---|---|"
for k in cpu mem; do
  arg=$([[ $k == cpu ]] && echo 2000000 || echo 20000000)
  n=$(best "$work/$k.native" "$arg")
  w=$(best "$corral" wasm run --memory 128M "$work/$k.wasm" -- "$arg")
  # Debian 12's wabt is built without WASI in its interpreter ("wasi support not compiled in").
  i="-"
  if command -v wasm-interp > /dev/null && ! wasm-interp --wasi "$work/$k.wasm" 2>&1 | grep -q "not compiled in"; then
    i=$(best wasm-interp --wasi "$work/$k.wasm" "$arg")" ms"
  fi
  j="-"; command -v node > /dev/null && j=$(best node --no-warnings "$src/wasi_node.mjs" "$work/$k.wasm" "$arg")
  echo "| $k | $n ms | $w ms | $(awk "BEGIN{printf \"%.2fx\", $n/$w}") | $i | $j ms |"
done
echo
mkdir -p "$work/empty"
printf '(module (memory (export "memory") 1) (func (export "_start")))' > "$work/nop.wat"
wat2wasm "$work/nop.wat" -o "$work/nop.wasm"
"$corral" wasm compile "$work/nop.wasm" > /dev/null
echo "| start | ms (best of 3) |"
echo "|---|---|"
echo "| corral exec -- /bin/true (cold sandbox) | $(best "$corral" exec -- /bin/true) |"
echo "| corral wasm run nop.wasm (cached) | $(best "$corral" wasm run "$work/nop.wasm") |"
echo
for k in cpu mem; do
  bytes=$(stat -c %s "$work/$k.wasm")
  ms=$(sed -n 's/.*compile_ms=\([0-9.]*\).*/\1/p' "$work/$k.compile")
  echo "compile $k.wasm: $bytes bytes in $ms ms = $(awk "BEGIN{printf \"%.0f\", $ms * 102400 / $bytes}") ms per 100 KB"
done
