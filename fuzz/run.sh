#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the libFuzzer targets built in build-fuzz/: smoke (all, short), fuzz (one, long), repro (one input).
#   fuzz/run.sh smoke SECONDS_EACH [TARGET...]
#   fuzz/run.sh fuzz TARGET SECONDS [extra libFuzzer flags...]
#   fuzz/run.sh repro TARGET FILE...
set -euo pipefail

src=$(cd "$(dirname "$0")" && pwd)
build=${FUZZ_BUILD:-build-fuzz}
nice_cmd=${FUZZ_NICE-nice -n 19}
all_targets=()
for f in "$src"/fuzz_*.cc; do n=${f##*/fuzz_}; all_targets+=("${n%.cc}"); done

# Every sanitizer report is fatal; stacks are symbolized when llvm-symbolizer is installed.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
for s in /usr/bin/llvm-symbolizer-14 /usr/bin/llvm-symbolizer; do
  if [[ -x $s && -z ${ASAN_SYMBOLIZER_PATH:-} ]]; then export ASAN_SYMBOLIZER_PATH=$s; fi
done

binary() {
  local bin=$build/fuzz_$1
  [[ -x $bin ]] || { echo "fuzz: no target '$1' (have: ${all_targets[*]}); build with make fuzz-build" >&2; exit 2; }
  echo "$bin"
}

dict_flag() { [[ -f $src/dict/$1.dict ]] && echo "-dict=$src/dict/$1.dict" || true; }

# The inputs a target must pass before any fuzzing: its seeds and every past finding.
replay_files() {
  local d
  for d in "$src/corpus/$1" "$src/regressions/$1"; do
    [[ -d $d ]] && find "$d" -type f ! -name '*.md' | sort
  done
  return 0
}

explain_crash() {
  local t=$1 art=$build/artifacts/$1
  echo "fuzz: $t FAILED. Reproduce: $build/fuzz_$t <input>   (make fuzz-repro TARGET=$t FILE=<input>)" >&2
  ls -1 "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-* 2>/dev/null | sed 's/^/  input: /' >&2 || true
  echo "  Then copy a minimized input into fuzz/regressions/$t/ (docs/testing.md)." >&2
}

# run TARGET SECONDS [flags...]: replays, then fuzzes with a work corpus in build-fuzz/ so
# the checked-in seeds stay small; prints one summary line.
run() {
  local t=$1 secs=$2
  shift 2
  local bin log
  bin=$(binary "$t")
  mkdir -p "$build/corpus/$t" "$build/artifacts/$t" "$build/logs"
  log=$build/logs/$t.log
  local replay
  mapfile -t replay < <(replay_files "$t")
  if ((${#replay[@]})); then
    if ! $nice_cmd "$bin" -runs=0 -artifact_prefix="$build/artifacts/$t/" "${replay[@]}" >"$log.replay" 2>&1; then
      grep -E "^Running: |PROPERTY VIOLATED|detail:|ERROR: |runtime error|SUMMARY" "$log.replay" | tail -8 >&2 || true
      echo "  full log: $log.replay" >&2
      echo "fuzz: $t fails on a checked-in input (seed or regression), see above" >&2
      return 1
    fi
  fi
  local flags=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
               -artifact_prefix="$build/artifacts/$t/")
  local d
  d=$(dict_flag "$t")
  [[ -n $d ]] && flags+=("$d")
  local status=0
  $nice_cmd "$bin" "${flags[@]}" "$@" "$build/corpus/$t" "$src/corpus/$t" >"$log" 2>&1 || status=$?
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if ((status != 0)); then
    grep -E "PROPERTY VIOLATED|detail:|ERROR: |runtime error|SUMMARY" "$log" | head -20 >&2 || true
    explain_crash "$t"
    return 1
  fi
  printf 'fuzz: %-15s ok  %6ss  %10s execs  corpus %s\n' "$t" "$secs" "${execs:-?}" \
    "$(ls "$build/corpus/$t" | wc -l)"
}

cmd=${1:-}
shift || true
case $cmd in
  smoke)
    secs=${1:?seconds per target}
    shift
    targets=("$@")
    ((${#targets[@]})) || targets=("${all_targets[@]}")
    failed=()
    for t in "${targets[@]}"; do run "$t" "$secs" || failed+=("$t"); done
    if ((${#failed[@]})); then
      echo "fuzz-smoke: FAILED: ${failed[*]}" >&2
      exit 1
    fi
    echo "fuzz-smoke: ${#targets[@]} targets, no crash, no property violation"
    ;;
  fuzz)
    t=${1:?target}
    secs=${2:?seconds}
    shift 2
    run "$t" "$secs" "$@"
    ;;
  repro)
    t=${1:?target}
    shift
    bin=$(binary "$t")
    exec "$bin" "$@"
    ;;
  *)
    sed -n '3,6p' "$0" >&2
    exit 2
    ;;
esac
