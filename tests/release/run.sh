#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make test-release`: a release with a throwaway key, checked, installed, and rebuilt.
#   tests/release/run.sh BUILD_DIR        (BUILD_DIR holds a dev build's corral, for keygen)
# Order: the cheap checks first, the clean-root install, then the slow second build.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${1:-$top/build}
tmp=$(mktemp -d /var/tmp/corral-test-release.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
status=0
# Every line also goes to a log, so the end can count the PASS/FAIL/SKIP lines of all parts.
exec > >(tee "$tmp/all.log") 2>&1

"$build/corral" keygen --out "$tmp/key" >/dev/null || { echo "test-release: corral keygen failed"; exit 1; }
priv=$tmp/key/audit-ed25519-private.pem pub=$tmp/key/audit-ed25519-public.pem

# Without a key the release stops at once, with one line that says how to give one.
err=$(RELEASE_KEY= "$top/scripts/release.sh" --out "$tmp/none" 2>&1 >/dev/null); rc=$?
if ((rc != 0)) && [[ $(wc -l <<<"$err") -eq 1 && $err == *RELEASE_KEY=* && ! -e $tmp/none/SHA256SUMS ]]; then
  echo "PASS Release.NoKeyStopsWithOneLine"
else
  echo "FAIL Release.NoKeyStopsWithOneLine: exit $rc: $err"; status=1
fi

err=$(cd "$top" && make --no-print-directory release RELEASE_KEY= RELEASE_OUT="$tmp/none" 2>&1 >/dev/null); rc=$?
if ((rc != 0)) && [[ $(wc -l <<<"$err") -eq 1 && $err == *RELEASE_KEY=* ]]; then
  echo "PASS Release.MakeReleaseWithoutKeyStopsWithOneLine"
else
  echo "FAIL Release.MakeReleaseWithoutKeyStopsWithOneLine: exit $rc: $err"; status=1
fi

if ! "$top/scripts/release.sh" --key "$priv" --out "$tmp/dist" >"$tmp/release.log" 2>&1; then
  tail -15 "$tmp/release.log"
  echo "FAIL Release.Builds: scripts/release.sh failed"
  echo "test-release: 0 passed, 1 failed"
  exit 1
fi
echo "PASS Release.Builds ($(($(date +%s) - t0)) s)"
t1=$(date +%s)
"$here/check_release.sh" "$tmp/dist" "$pub" "$priv" "$top/build-release/build" || status=1
echo "test-release: checks took $(($(date +%s) - t1)) s"
t1=$(date +%s)
"$here/install_test.sh" "$tmp/dist"/corral_*_amd64.deb || status=1
echo "test-release: install test took $(($(date +%s) - t1)) s"
if [[ ${CORRAL_SKIP_REPRODUCIBLE:-} == 1 ]]; then
  echo "SKIP Reproducible: CORRAL_SKIP_REPRODUCIBLE=1"
else
  "$here/reproducible.sh" "$tmp/dist" "$priv" || status=1
fi
echo "test-release: took $(($(date +%s) - t0)) s"
count() { grep -c "^$1 " "$tmp/all.log"; }
echo "test-release: $(count PASS) passed, $(count FAIL) failed, $(count SKIP) skipped"
((status == 0 && $(count FAIL) == 0))
