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
mkdir -p "$root/mnt/dist" && cp "$deb" "$here/hello.wat" "$root/mnt/dist/"
cp /etc/resolv.conf "$root/etc/resolv.conf"
debname=$(basename "$deb")

# in_root CMD: runs the shell command CMD as root inside the clean root. With
# IN_ROOT_KERNEL=1, the host's /boot and /usr/lib/modules are bound read-only over the root's:
# the microVM backend boots an installed Debian kernel, and a container root has none.
in_root() {
  unshare --mount --pid --fork --propagation private sh -ec '
    r=$1; shift
    mount --bind "$r" "$r"
    mount -t proc proc "$r/proc"
    mount --rbind /dev "$r/dev"
    mount --rbind /sys "$r/sys"
    mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
    mount -t tmpfs -o mode=0755 tmpfs "$r/run"
    if [ "${IN_ROOT_KERNEL:-}" = 1 ]; then
      for d in /boot /usr/lib/modules; do
        mkdir -p "$r$d" && mount --bind "$d" "$r$d" && mount -o remount,bind,ro "$r$d"
      done
    fi
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
check Install.HelpersBesideCorralCore in_root "for b in corral corral-core corral-wasm-guest corral-vm-init; do test -f /usr/bin/\$b -a -x /usr/bin/\$b || { echo \"/usr/bin/\$b missing or not executable\"; exit 1; }; done"
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

# The other backends, with what the package recommends (first alternative of each, not their
# own Recommends: qemu-system-x86's would bring in a desktop stack), installed in the same
# root again now that the purge is checked. Doctor reports the microVM backend usable only
# when QEMU, a kernel, mkfs.erofs and the agent beside corral-core are all there; `corral wasm
# run` compiles a module with wasm2c and cc, then runs it in corral-wasm-guest.
t0=$(date +%s)
recommends=$(dpkg-deb -f "$deb" Recommends | tr ',' '\n' | sed -e 's/|.*//' -e 's/([^)]*)//' -e 's/ //g' | grep -vx -e '' -e man-db | tr '\n' ' ')
check Install.RecommendsInstall in_root "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /mnt/dist/$debname $recommends"
echo "install test: the package with its Recommends ($recommends) installed in $(($(date +%s) - t0)) s"
check Install.WasmRunPrintsFromTheGuest in_root "wat2wasm /mnt/dist/hello.wat -o /tmp/hello.wasm && test \"\$(corral wasm run /tmp/hello.wasm)\" = 'corral wasm ok'"
# The control: without the helper beside corral-core, the same run is refused by name.
refuses Install.WasmRunWithoutTheGuestIsRefused "cannot find /usr/bin/corral-wasm-guest" in_root \
  "wat2wasm /mnt/dist/hello.wat -o /tmp/hello.wasm && mv /usr/bin/corral-wasm-guest /tmp/ && s=0 && corral wasm run /tmp/hello.wasm || s=\$?; mv /tmp/corral-wasm-guest /usr/bin/; exit \$s"
if compgen -G '/boot/vmlinuz-*' >/dev/null && [[ -d /usr/lib/modules ]]; then
  export IN_ROOT_KERNEL=1
  check Install.DoctorFindsTheVmBackend in_root "corral doctor | grep -E '^vm: (kvm|tcg only) '"
  check Install.DoctorWithoutTheAgentSaysSo in_root "mv /usr/bin/corral-vm-init /tmp/ && s=0 && corral doctor | grep -F 'vm: unavailable (the guest agent /usr/bin/corral-vm-init' || s=\$?; mv /tmp/corral-vm-init /usr/bin/; exit \$s"
  # A boot of the stripped agent as PID 1: 10 s here under TCG with the runtime image built
  # (docs/benchmarks-vm.md has 20-35 s on a loaded host). CORRAL_RELEASE_VM_BOOT=0 skips it.
  if [[ ${CORRAL_RELEASE_VM_BOOT:-1} != 0 ]]; then
    t1=$(date +%s)
    # The root's /tmp is a tmpfs, so the run directory is on another file system than the
    # image cache and the kernel: the copy falls back from copy_file_range's EXDEV to read and
    # write (base/copy_fd.cc), which this boot proves from the package.
    check Install.VmBootsTheStrippedAgent in_root "test \"\$(corral exec --backend vm --allow-weaker kvm -- sh -c 'echo vm ok')\" = 'vm ok'"
    echo "install test: the microVM run took $(($(date +%s) - t1)) s"
  else
    skip Install.VmBootsTheStrippedAgent "CORRAL_RELEASE_VM_BOOT=0"
  fi
  unset IN_ROOT_KERNEL
else
  for t in DoctorFindsTheVmBackend DoctorWithoutTheAgentSaysSo VmBootsTheStrippedAgent; do
    skip "Install.$t" "the host has no /boot/vmlinuz-* and /usr/lib/modules to lend the root"
  done
fi
echo "install test: the backends took $(($(date +%s) - t0)) s"
totals
