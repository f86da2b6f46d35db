#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the security and integration tests again as an unprivileged user (nobody), the
# way bubblewrap's test suite loops over privilege modes. Skipped, loudly, when not root.
# CORRAL_CTEST_ARGS adds ctest options (make claims: --output-junit FILE).
set -euo pipefail
build=${1:-build}
if [[ $(id -u) -ne 0 ]]; then
  echo "rootless pass: already unprivileged (uid $(id -u)); the main pass covered it"
  exit 0
fi
build=$(cd "$build" && pwd)
tmp=$(mktemp -d /tmp/corral-rootless.XXXXXX)
chmod 1777 "$tmp"  # sticky, like /tmp: corral passes over a TMPDIR others could rename in
# ctest writes its logs under BUILD/Testing: lend that one directory to nobody for the pass.
mkdir -p "$build/Testing/Temporary"
chown -R 65534:65534 "$build/Testing"
restore() { chown -R 0:0 "$build/Testing"; rm -rf "$tmp"; }
trap restore EXIT
cd "$build"
echo "rootless pass: security and integration tests as uid 65534"
setpriv --reuid=65534 --regid=65534 --clear-groups --reset-env \
  env TMPDIR="$tmp" HOME="$tmp" PATH=/usr/bin:/bin CORRAL_TEST_MODE=rootless \
  ctest --output-on-failure -j "$(nproc)" --timeout 300 -L 'security|integration' ${CORRAL_CTEST_ARGS:-}
