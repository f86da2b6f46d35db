#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The suite from a checkout nobody else can traverse (issue #26: a clone under /root or in a
# `mktemp -d` folder). corral's binaries are copied into a 0700 directory, TMPDIR points
# inside it too, and a representative subset of the suite runs against that copy: the
# --ro-bind of the build directory, the probe binds of every security test, workspaces and
# the devpts and pipe tests. As root this is the case that used to fail with
# "clone --ro-bind source (...): Permission denied".
set -euo pipefail
build=$(cd "$1" && pwd)
outer=$(mktemp -d)  # 0700, owned by the caller
trap 'rm -rf "$outer"' EXIT
[[ $(stat -c %a "$outer") == 700 ]] || { echo "mktemp -d did not make a 0700 directory" >&2; exit 1; }
mkdir -p "$outer/checkout/build" "$outer/tmp"
cp "$build/corral" "$build/corral-core" "$outer/checkout/build/"
chmod 1777 "$outer/tmp"
export CORRAL_BIN="$outer/checkout/build/corral" TMPDIR="$outer/tmp"
echo "checkout-0700: corral at $CORRAL_BIN, TMPDIR=$TMPDIR, as uid $(id -u)"
"$build/tests/integration/integration_bad_input_test" --gtest_brief=1 \
  --gtest_filter='ExecBadInputHost.UnderASeccompFilterTheRefusalBlamesTheFilterNotTheKernel'
for t in claims_fs_root_test claims_fs_devpts_test; do
  "$build/tests/security/$t" --gtest_brief=1
done
# Not the tests that hand the sandbox to another uid (as_user): nobody cannot reach a copy
# of corral inside root's 0700 directory, which is the point of the directory.
"$build/tests/security/claims_fd_stdio_test" --gtest_brief=1 --gtest_filter='-*.RootAnotherUsers*'
echo "checkout-0700: ok"
