#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CPython's regression tests (docs/compat.md) inside corral and inside bubblewrap, as root and
# then as nobody (skipped, loudly, when not root). Minutes, not seconds: a CI step of its own.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
run() { /usr/bin/python3 "$src/tests/compat/compat.py" --suite cpython --corral "$build/corral" --source "$src"; }
echo "compat: CPython's regression tests as uid $(id -u)"
run
if [[ $(id -u) -ne 0 ]]; then
  echo "compat: rootless pass: already unprivileged (uid $(id -u))"
  exit 0
fi
tmp=$(mktemp -d /tmp/corral-compat.XXXXXX)
chmod 1777 "$tmp"
trap 'rm -rf "$tmp"' EXIT
echo "compat: CPython's regression tests as uid 65534"
setpriv --reuid=65534 --regid=65534 --clear-groups --reset-env \
  env TMPDIR="$tmp" HOME="$tmp" PATH=/usr/bin:/bin \
  /usr/bin/python3 "$src/tests/compat/compat.py" --suite cpython --corral "$build/corral" --source "$src"
