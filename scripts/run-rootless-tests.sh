#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the security and integration tests again as an unprivileged user (nobody), the
# way bubblewrap's test suite loops over privilege modes. Skipped, loudly, when not root.
set -euo pipefail
build=${1:-build}
if [[ $(id -u) -ne 0 ]]; then
  echo "rootless pass: already unprivileged (uid $(id -u)); the main pass covered it"
  exit 0
fi
build=$(cd "$build" && pwd)
# nobody needs to traverse the build tree and create temp dirs.
tmp=$(mktemp -d /tmp/corral-rootless.XXXXXX)
chmod 0777 "$tmp"
trap 'rm -rf "$tmp"' EXIT
cd "$build"
setpriv --reuid=65534 --regid=65534 --clear-groups --reset-env \
  env TMPDIR="$tmp" HOME="$tmp" PATH=/usr/bin:/bin CORRAL_TEST_MODE=rootless \
  ctest --output-on-failure -j "$(nproc)" --timeout 300 -L 'security|integration' --no-tests=ignore
