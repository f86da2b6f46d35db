#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the same commit again in another folder, later, without ccache, and compares.
#   reproducible.sh DIST_A PRIVATE_PEM
# DIST_A is a release already made by scripts/release.sh (in build-release/). This second
# build is a real one (CCACHE_DISABLE=1: a cache hit would hide a difference), in a folder
# of another name and depth, with another umask and TZ; every artifact must be identical
# byte for byte, and so must the binaries inside the .deb.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
dist_a=$(cd "$1" && pwd) key=$2
tmp=$(mktemp -d /var/tmp/corral-repro.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
work=$tmp/another/folder/deeper
start=$(date +%s)
if ! (umask 0002 && CCACHE_DISABLE=1 TZ=America/New_York "$top/scripts/release.sh" --key "$key" --out "$tmp/dist" --work "$work") >"$tmp/release.log" 2>&1; then
  tail -5 "$tmp/release.log"
  fail Reproducible.SecondBuild "scripts/release.sh failed ($(tail -1 "$tmp/release.log"))"
  totals
  exit 1
fi
echo "reproducible: second build without ccache took $(($(date +%s) - start)) s"
for f in "$dist_a"/*; do
  name=$(basename "$f")
  if cmp -s "$f" "$tmp/dist/$name"; then
    pass "Reproducible.IdenticalBytes[$name]"
  else
    fail "Reproducible.IdenticalBytes[$name]" "differs from the build in $work ($(cmp "$f" "$tmp/dist/$name" 2>&1 | head -1))"
  fi
done
for bin in corral corral-core corral-wasm-guest corral-vm-init; do
  if cmp -s "$top/build-release/stage/usr/bin/$bin" "$work/stage/usr/bin/$bin" 2>/dev/null; then
    pass "Reproducible.IdenticalBinary[$bin]"
  else
    fail "Reproducible.IdenticalBinary[$bin]" "$(cmp "$top/build-release/stage/usr/bin/$bin" "$work/stage/usr/bin/$bin" 2>&1 | head -1)"
  fi
done
totals
