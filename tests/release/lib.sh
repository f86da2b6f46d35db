# SPDX-License-Identifier: Apache-2.0
# Shared by the release tests: one PASS/FAIL/SKIP line per check, and the totals at the end.
passed=0 failed=0 skipped=0
pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1: $2"; }
skip() { skipped=$((skipped + 1)); echo "SKIP $1: $2"; }
# check NAME CMD...: passes when CMD exits 0; on failure its output's last lines say why.
check() {
  local name=$1 log
  shift
  log=$(mktemp)
  if "$@" >"$log" 2>&1; then pass "$name"; else fail "$name" "$(tail -5 "$log" | tr '\n' ' ')"; fi
  rm -f "$log"
}
# refuses NAME EXPECT CMD...: passes when CMD exits non-zero with one line on stderr naming EXPECT.
refuses() {
  local name=$1 expect=$2 err status=0
  shift 2
  err=$("$@" 2>&1 >/dev/null) || status=$?
  if ((status == 0)); then fail "$name" "exited 0"; return; fi
  if [[ $(printf '%s\n' "$err" | wc -l) -ne 1 || $err != *"$expect"* ]]; then
    fail "$name" "exit $status but stderr is not one line naming '$expect': $err"
    return
  fi
  pass "$name"
}
# Per script; run.sh prints the one "N passed, N failed" line for the whole of test-release.
totals() { echo "$(basename "$0"): PASS $passed, FAIL $failed, SKIP $skipped"; ((failed == 0)); }
