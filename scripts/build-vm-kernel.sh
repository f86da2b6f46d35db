#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds corral's minimal VM guest kernel (issue 23) from Debian 12's linux-source-6.1:
# `make tinyconfig` plus src/vm/guest/kernel.config, everything built in, no modules.
# The bzImage goes to corral's VM image cache ($CORRAL_VM_CACHE, else
# $XDG_CACHE_HOME/corral/vm, else ~/.cache/corral/vm) as vmlinuz-minimal-<key>, key = SHA-256
# over this recipe's version, the source package's version and the fragment; it is written
# under a temporary name and renamed, so a reader never sees half a kernel. A cached key is
# not rebuilt. Too slow for CI (minutes on two cores): never part of `make test`.
#   scripts/build-vm-kernel.sh [-j N]     prints the kernel's path
# Missing build tools or source: as root it installs them (scripts/bootstrap.sh kernel-build);
# otherwise it says which to install.
set -euo pipefail

recipe=1
here=$(cd "$(dirname "$0")/.." && pwd)
fragment=$here/src/vm/guest/kernel.config
jobs=$(nproc)
if [[ ${1:-} == -j ]]; then jobs=${2:?-j needs a number}; elif [[ -n ${1:-} ]]; then
  echo "usage: scripts/build-vm-kernel.sh [-j N]" >&2; exit 2
fi

need() {
  local t
  for t in gcc make bc bison flex xz perl; do command -v "$t" >/dev/null || return 1; done
  [[ -e /usr/include/libelf.h && -e /usr/include/openssl/ssl.h && -e /usr/src/linux-source-6.1.tar.xz ]]
}
if ! need; then
  if [[ $(id -u) -eq 0 ]]; then "$here/scripts/bootstrap.sh" kernel-build
  else
    echo "build-vm-kernel: missing build tools or source; run: sudo scripts/bootstrap.sh kernel-build" >&2; exit 1
  fi
fi

version=$(dpkg-query -W -f='${Version}' linux-source-6.1)
key=$(printf 'corral-vm-kernel %s\nlinux-source-6.1 %s\n%s\n' "$recipe" "$version" "$(sha256sum <"$fragment")" |
  sha256sum | cut -c1-32)

if [[ -n ${CORRAL_VM_CACHE:-} ]]; then cache=$CORRAL_VM_CACHE
elif [[ ${XDG_CACHE_HOME:-} == /* ]]; then cache=$XDG_CACHE_HOME/corral/vm
else cache=$HOME/.cache/corral/vm; fi
mkdir -p "$(dirname "$cache")" && mkdir -p -m 0700 "$cache"
out=$cache/vmlinuz-minimal-$key
if [[ -f $out ]]; then echo "$out"; exit 0; fi

work=$(mktemp -d "${TMPDIR:-/tmp}/corral-kernel.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "build-vm-kernel: linux-source-6.1 $version, key $key, in $work (-j$jobs)" >&2
# CORRAL_KERNEL_SRC: an already unpacked linux-source-6.1 tree (read only: the build is out of tree).
if [[ -n ${CORRAL_KERNEL_SRC:-} ]]; then src=$CORRAL_KERNEL_SRC
else tar -C "$work" -xf /usr/src/linux-source-6.1.tar.xz; src=$work/linux-source-6.1; fi
# CORRAL_KERNEL_BUILD_DIR: a build directory to keep (an incremental rebuild after a fragment change).
obj=${CORRAL_KERNEL_BUILD_DIR:-$work/build}
mkdir -p "$obj"
export KBUILD_BUILD_USER=corral KBUILD_BUILD_HOST=corral
make -C "$src" O="$obj" -s tinyconfig
(cd "$obj" && "$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$fragment" >/dev/null)
make -C "$src" O="$obj" -s olddefconfig
# Fail closed: every line of the fragment must have survived Kconfig's dependency solving.
missing=0
while IFS= read -r line; do
  [[ $line =~ ^CONFIG_ || $line =~ ^#\ CONFIG_.*\ is\ not\ set$ ]] || continue
  if ! grep -qxF -- "$line" "$obj/.config"; then echo "build-vm-kernel: not in the final .config: $line" >&2; missing=1; fi
done <"$fragment"
((missing == 0)) || exit 1
make -C "$src" O="$obj" -s -j"$jobs" bzImage
tmp=$cache/.tmp-vmlinuz-$key-$$
cp "$obj/arch/x86/boot/bzImage" "$tmp"
chmod 0644 "$tmp"
mv -f "$tmp" "$out"
echo "$out"
