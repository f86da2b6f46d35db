#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The .deb in a clean Debian 12 root: install, use, purge, and nothing left behind.
#   install_test.sh DEB
# The root is mmdebstrap's minbase of bookworm plus man-db, from the host's apt sources,
# cached as a tarball in $CORRAL_TEST_CACHE (default /var/cache/corral-test) and unpacked
# fresh for every run. The root is entered through a new mount and pid namespace and
# pivot_root, not chroot: the kernel refuses a user namespace to a chrooted process, and
# corral exec needs one (docs/install.md, "Trying a package in a clean root").
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
deb=$(realpath "$1")
cache=${CORRAL_TEST_CACHE:-/var/cache/corral-test}
tarball=$cache/bookworm-minbase-man-db.tar
tmp=$(mktemp -d /var/tmp/corral-install-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root

if [[ ! -s $tarball ]]; then
  echo "install test: building the clean root once (mmdebstrap bookworm minbase), cached in $tarball"
  mkdir -p "$cache"
  if ! mmdebstrap --quiet --format=tar --variant=minbase --include=man-db bookworm "$tarball.part" >"$tmp/mmdebstrap.log" 2>&1; then
    tail -5 "$tmp/mmdebstrap.log"
    fail Install.CleanRoot "mmdebstrap failed ($(tail -1 "$tmp/mmdebstrap.log"))"
    totals
    exit 1
  fi
  mv "$tarball.part" "$tarball"
fi
mkdir -p "$root" && tar -xf "$tarball" -C "$root"
mkdir -p "$root/mnt/dist" && cp "$deb" "$root/mnt/dist/"
cp /etc/resolv.conf "$root/etc/resolv.conf"
debname=$(basename "$deb")

# in_root CMD: runs the shell command CMD as root inside the clean root.
in_root() {
  unshare --mount --pid --fork --propagation private sh -ec '
    r=$1; shift
    mount --bind "$r" "$r"
    mount -t proc proc "$r/proc"
    mount --rbind /dev "$r/dev"
    mount --rbind /sys "$r/sys"
    mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
    mount -t tmpfs -o mode=0755 tmpfs "$r/run"
    cd "$r" && mkdir -p .oldroot && pivot_root . .oldroot && umount -l /.oldroot && rmdir /.oldroot
    exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb sh -ec "$1"' \
    in_root "$root" "$1"
}

# Everything but what apt and dpkg keep for themselves, and caches and logs.
snapshot='find / -xdev \( -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/cache -o -path /var/log \
  -o -path /mnt/dist -o -path /etc/ld.so.cache \) -prune -o -print | sort'
in_root "$snapshot" >"$tmp/before.txt" 2>"$tmp/err" || { fail Install.Snapshot "$(cat "$tmp/err")"; totals; exit 1; }

check Install.AptInstallsTheDeb in_root "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /mnt/dist/$debname"
check Install.VersionRuns in_root "corral version --json | grep -q '\"release\": true'"
check Install.DoctorPasses in_root "corral doctor"
check Install.ExecTrue in_root "corral exec -- true"
check Install.ExecSeesSandbox in_root "test \"\$(corral exec -- sh -c 'id -u; hostname')\" = \"\$(printf '1000\ncorral')\""
check Install.ManCorral in_root "MANPAGER=cat man corral | grep -q 'corral exec' && MANPAGER=cat man corral-verify-release | grep -q 'SHA256SUMS'"
check Install.BashCompletionLoads in_root "bash -c '. /usr/share/bash-completion/completions/corral && complete -p corral'"

# The daemon, started the way the unit starts it (systemd is not PID 1 here), when this tree has one.
if in_root "corral --help" 2>/dev/null | grep -q '^  daemon'; then
  start=$(sed -n 's/^ExecStart=//p' "$here/../../packaging/systemd/corral.service")
  check Install.DaemonServesSessionLs in_root "mkdir -p /run/corral /var/lib/corral && ($start & echo \$! > /run/corral.pid) &&
    for i in \$(seq 100); do [ -S /run/corral/api.sock ] && break; sleep 0.1; done &&
    corral session ls; s=\$?; kill \$(cat /run/corral.pid); exit \$s"
else
  skip Install.DaemonServesSessionLs "this tree's corral has no daemon subcommand (corral --help lists none): systemctl start corral and corral session ls not tried"
fi

check Install.PurgeRemovesThePackage in_root "DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq --autoremove corral && ! dpkg -s corral 2>/dev/null && test ! -e /var/lib/corral"
in_root "$snapshot" >"$tmp/after.txt" 2>"$tmp/err"
if diff "$tmp/before.txt" "$tmp/after.txt" >"$tmp/diff"; then
  pass Install.PurgeLeavesNothingBehind
else
  fail Install.PurgeLeavesNothingBehind "$(grep '^[<>]' "$tmp/diff" | head -10 | tr '\n' ' ')"
fi
totals
